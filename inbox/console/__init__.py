"""The operator console: server-rendered pages over the operator API (``inbox.queries``
and the replay functions). Needs the ``console`` extra (``pip install 'pg-inbox[console]'``:
Jinja2 and itsdangerous).

Where it runs:

- ``inbox console [--host --port]``: on its own (``[console] host``/``port``, default
  127.0.0.1:8001), at ``http://HOST:PORT/console/``.
- ``inbox serve`` with ``[console] enabled = true``: at ``/console`` next to the receiver.
- In any ASGI app (Starlette, FastAPI), mounted as below. Django and Flask are WSGI: run
  ``inbox console`` beside them (or mount the app in an ASGI server of its own) and route
  ``/console`` to it in the reverse proxy.

Mounted in an ASGI app:

    from inbox import load_settings
    from inbox.console import create_app

    console = create_app(load_settings(), dsn="postgresql://…")
    app.mount("/console", console)          # app = FastAPI() or Starlette()
    # a mounted app gets no lifespan: close its pool at your shutdown with
    # await console.state.console.pool.close()

Settings (``[console]``; each also ``INBOX_CONSOLE__KEY``):

- ``enabled`` (false): mount it in ``inbox serve``.
- ``secret_key`` / ``secret_key_env`` / ``secret_key_file``: signs the session cookies
  (at least 16 characters; the console refuses to start without one).
- ``[[console.users]]`` ``name``, ``role`` (``viewer`` reads; ``operator`` also replays
  and retries dead letters), ``password_hash`` (``inbox console hash-password``, scrypt).
- ``bodies`` (``operators``): who sees event bodies and may download them: ``operators``,
  ``all`` signed-in users, or ``none``.
- ``trusted_header`` (none) and ``trusted_proxies`` (CIDRs): an SSO proxy's header naming
  the user, honoured only from those peer addresses; ``trusted_role`` (``viewer``) for a
  header user without a ``[[console.users]]`` entry.
  ``X-Forwarded-Proto: https`` from those addresses makes the session cookie Secure (a
  proxy that ends TLS); ``inbox console`` does not rewrite the peer address from
  ``X-Forwarded-For``, since the trust decision is made on the peer. (``inbox serve`` runs
  uvicorn with its default proxy headers: there, list the proxy in uvicorn's
  ``forwarded_allow_ips`` only if it is the SSO proxy.)
- ``session_idle_minutes`` (30); ``login_attempts`` (5) failed sign-ins per user and address
  per ``login_window_seconds`` (300), then 429 until the window passes.
- ``base_path`` (``/console``), ``host``, ``port``; ``receiver_metrics``: receivers'
  ``/metrics`` URLs for the overview's rejection counts.
"""

from inbox.console._app import create_app

__all__ = ["create_app"]
