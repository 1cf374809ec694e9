"""The web room: the HTTP faces of the receiving room.

Owns the Starlette receiver app (``_asgi``: ``inbox.create_app``) and the adapters for web
stacks other than ASGI, ``inbox.contrib.django`` and ``inbox.contrib.flask`` (documented public
paths, which is why this room keeps the name ``contrib``). Each adapter imports its framework,
so each is imported on its own; all call the same core (``inbox._receiving.receive``) as the
ASGI app does.

May import: the receiving, writing and core rooms. Never operations or the CLI.
"""

__all__: list[str] = []
