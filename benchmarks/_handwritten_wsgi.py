"""The hand-written receiver a sync team writes, the peer of the Flask and Django receivers:
the same Standard Webhooks endpoint as ``benchmarks/_handwritten.py`` (the SDK's verify, one
``INSERT ... ON CONFLICT DO NOTHING RETURNING`` committed before the 200, the same table), as
a Flask view on a ``psycopg_pool.ConnectionPool``, served by the same gunicorn as they are.
So the sync receivers are compared with what their own stack reaches without pg-inbox.

    BENCH_HANDWRITTEN_DSN=... BENCH_HANDWRITTEN_SECRET=... BENCH_HANDWRITTEN_POOL=10 \\
        gunicorn --worker-class gthread --threads 32 benchmarks._handwritten_wsgi:app
"""

from __future__ import annotations

import hashlib
import os

from flask import Flask, Response, jsonify, request
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from benchmarks._handwritten import INSERT, SCHEMA

webhook = Webhook(os.environ["BENCH_HANDWRITTEN_SECRET"])
size = int(os.environ["BENCH_HANDWRITTEN_POOL"])
pool = ConnectionPool(os.environ["BENCH_HANDWRITTEN_DSN"], min_size=size, max_size=size)
with pool.connection() as conn:
    conn.execute(SCHEMA)

app = Flask(__name__)


@app.post("/inbox/webhooks/<source>")
def receive(source: str) -> tuple[Response, int]:
    body = request.get_data()
    headers = dict(request.headers)
    try:
        payload = webhook.verify(body, headers)
    except WebhookVerificationError:
        return jsonify(error="unauthorized"), 401
    event_type = payload.get("type") if isinstance(payload, dict) else None
    try:
        with pool.connection() as conn:  # commits when the block ends
            row = conn.execute(
                INSERT,
                (
                    source,
                    headers["Webhook-Id"],
                    event_type,
                    Jsonb(headers),
                    body,
                    hashlib.sha256(body).digest(),
                ),
            ).fetchone()
    except Exception:  # noqa: BLE001 - any database trouble: make the provider retry
        return jsonify(error="unavailable"), 503
    return jsonify(status="accepted" if row is not None else "duplicate"), 200


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}
