"""``import inbox`` stays cheap for a host app: the driver, the verifiers' cryptography,
logging's renderers, the web stack and the settings load when first used, not on import.

What the import costs is measured with ``python -X importtime`` (docs/architecture.md), never
timed here; this pins which heavy modules it must not pull in.
"""

from __future__ import annotations

import pytest

from tests._imports import loaded_after as _loaded_after

HEAVY = (
    "asyncio",  # a sync host (Django, Flask) never needs it
    "psycopg",
    "psycopg_pool",
    "cryptography",
    "structlog",
    "structlog.dev",
    "starlette",
    "jinja2",
    "pydantic",
    "pydantic_settings",
    "prometheus_client",
)


def loaded_after(code: str) -> list[str]:
    return _loaded_after(code, HEAVY)


@pytest.mark.parametrize(
    "code",
    [
        "import inbox",
        "from inbox import InboxWriter",
        "from inbox import AsyncInboxWriter, WriteResult, InboxError",
    ],
)
def test_importing_the_writer_loads_no_heavy_module(code: str) -> None:
    assert loaded_after(code) == []


def test_the_driver_loads_when_a_writer_is_built(db_url: str) -> None:
    # The other side of the bargain: the first use pays, and then it works.
    code = (
        "from inbox import InboxWriter\n"
        f"with InboxWriter({db_url!r}) as w:\n"
        "    assert w.write('shop', 'k1', b'{}').is_new\n"
    )
    assert {"psycopg", "psycopg_pool"} <= set(loaded_after(code))
