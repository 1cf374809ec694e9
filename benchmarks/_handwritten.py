"""The hand-written receiver the HTTP benchmark runs beside `inbox serve`.

What a competent Python team writes when it needs a Standard Webhooks endpoint and has read
the advice (verify the raw bytes, claim the key atomically, acknowledge after commit), with
the same fast parts `inbox serve` gets: Starlette on the same uvicorn with httptools and
uvloop, the ``standardwebhooks`` SDK's ``Webhook.verify``, a ``psycopg_pool`` pool and one
``INSERT ... ON CONFLICT DO NOTHING RETURNING`` committed before the 200. It stores what
`inbox serve` stores in its log row (source, key, type, headers, raw body, its hash), in a
table of its own; it queues no work row and records no duplicate delivery, which
`inbox serve` does.

It runs in the product's environment, so the web stack is the very one `inbox serve` uses
(the SDK is in the ``dev`` extra):

    python -m benchmarks._handwritten PORT DATABASE_URL SECRET POOL_SIZE   # until SIGTERM
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import AsyncIterator

# The peer as a team writes it: a module of imports and one endpoint.
import uvicorn
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SCHEMA = """
create table if not exists handwritten_events (
    id bigint generated always as identity primary key,
    source text not null,
    idempotency_key text not null,
    event_type text,
    headers jsonb not null,
    body bytea not null,
    body_sha256 bytea not null,
    received_at timestamptz not null default now(),
    unique (source, idempotency_key)
)
"""

INSERT = """
insert into handwritten_events (source, idempotency_key, event_type, headers, body, body_sha256)
values (%s, %s, %s, %s, %s, %s)
on conflict (source, idempotency_key) do nothing
returning id
"""


def make_app(dsn: str, secret: str, pool_size: int) -> Starlette:
    webhook = Webhook(secret)
    pool = AsyncConnectionPool(dsn, min_size=pool_size, max_size=pool_size, open=False)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.open(wait=True)
        async with pool.connection() as conn:
            await conn.execute(SCHEMA)
        try:
            yield
        finally:
            await pool.close()

    async def receive(request: Request) -> Response:
        body = await request.body()
        headers = dict(request.headers)
        try:
            payload = webhook.verify(body, headers)
        except WebhookVerificationError:
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        event_type = payload.get("type") if isinstance(payload, dict) else None
        try:
            async with pool.connection() as conn:  # commits when the block ends
                cursor = await conn.execute(
                    INSERT,
                    (
                        request.path_params["source"],
                        headers["webhook-id"],
                        event_type,
                        Jsonb(headers),
                        body,
                        hashlib.sha256(body).digest(),
                    ),
                )
                row = await cursor.fetchone()
        except Exception:  # noqa: BLE001 - any database trouble: make the provider retry
            return JSONResponse({"error": "unavailable"}, status_code=503)
        status = "accepted" if row is not None else "duplicate"
        return JSONResponse({"status": status})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/webhooks/{source}", receive, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m benchmarks._handwritten PORT DATABASE_URL SECRET POOL_SIZE")
        return 2
    port, dsn, secret, pool_size = int(argv[0]), argv[1], argv[2], int(argv[3])
    uvicorn.run(
        make_app(dsn, secret, pool_size),
        host="127.0.0.1",
        port=port,
        access_log=False,
        log_level="warning",
        server_header=False,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
