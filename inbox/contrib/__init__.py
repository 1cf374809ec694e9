"""Adapters for web stacks other than ASGI: ``inbox.contrib.django``, ``inbox.contrib.flask``.

Each imports its framework, so each is imported on its own; all call the same core
(``inbox._receive.receive``) as the ASGI app does.
"""

__all__: list[str] = []
