"""The operator console: server-rendered pages over the operator API (``inbox.queries``
and the replay functions), mountable into any ASGI application::

    from starlette.applications import Starlette
    from starlette.routing import Mount
    from inbox import load_settings
    from inbox.console import create_app

    settings = load_settings()
    app = Starlette(routes=[Mount("/console", app=create_app(settings))])

Needs the ``console`` extra (``pip install 'pg-inbox[console]'``: Jinja2, itsdangerous).
"""

from inbox.console._app import create_app
from inbox.console._dev import mount_for_dev

__all__ = ["create_app", "mount_for_dev"]
