"""The Flask app benchmarks/receiver_load serves through gunicorn, the blueprint registered
as docs/receiving.md says.

    INBOX_CONFIG=inbox.toml gunicorn --worker-class gthread --threads 32 benchmarks._flask_app:app
"""

from __future__ import annotations

from flask import Flask

from inbox import load_settings
from inbox.contrib.flask import create_blueprint

app = Flask(__name__)
app.register_blueprint(create_blueprint(load_settings()), url_prefix="/inbox")


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}
