"""Who is signed in: users from the settings, an SSO proxy's trusted header, the session a
one-time link of ``inbox dev`` started (inbox.console._links)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal

from starlette.requests import HTTPConnection

from inbox._core.config.settings import ConsoleSettings
from inbox._core.logs import get_logger
from inbox._operations.console_sessions import credential_digest
from inbox.console import _api
from inbox.console._passwords import verify_password
from inbox.console._pool import ConsolePool
from inbox.console._session import peer_in, session_of

__all__ = ["Principal", "authenticate", "current_principal", "end_session", "start_session"]

log = get_logger("inbox.console")

Role = Literal["viewer", "operator"]

# A valid hash of a random password: a sign-in for an unknown user costs what a wrong
# password costs, so the response time does not tell which names exist.
_DUMMY_HASH = "scrypt$32768$8$1$ocx7bBDKMX1CEVb2hbArWw$Rdj5XrYWD3A8eL3-X48nRZLjXqHGEc5WGvz7W6BcVVE"


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    role: Role
    via: Literal["password", "header", "dev"]

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    def may_see_bodies(self, bodies: str) -> bool:
        return bodies == "all" or (bodies == "operators" and self.is_operator)


def _role_of(settings: ConsoleSettings, name: str) -> Role | None:
    user = next((u for u in settings.users if u.name == name), None)
    return None if user is None else user.role


def authenticate(settings: ConsoleSettings, name: str, password: str) -> Principal | None:
    """The user, when ``password`` is theirs."""
    user = next((u for u in settings.users if u.name == name), None)
    stored = user.password_hash.get_secret_value() if user and user.password_hash else None
    matches = verify_password(password, stored or _DUMMY_HASH)
    if user is None or stored is None or not matches:
        return None
    return Principal(user.name, user.role, "password")


def _trusted_peer(settings: ConsoleSettings, conn: HTTPConnection) -> bool:
    return peer_in(conn, settings.trusted_proxies)


def _credential(settings: ConsoleSettings, name: str, via: str) -> bytes | None:
    """What a session of ``name`` must remember of the settings now; None: no such user."""
    if via == "dev":
        return credential_digest("dev", "operator", None)
    user = next((u for u in settings.users if u.name == name), None)
    if user is None:
        return None
    stored = user.password_hash.get_secret_value() if user.password_hash else None
    return credential_digest(user.name, user.role, stored)


async def start_session(
    settings: ConsoleSettings, pool: ConsolePool, conn: HTTPConnection, principal: Principal
) -> None:
    """Sign ``principal`` in (a password or an ``inbox dev`` link): a row in the database,
    its token in the cookie."""
    assert principal.via in ("password", "dev")
    credential = _credential(settings, principal.name, principal.via)
    assert credential is not None
    token = secrets.token_urlsafe(32)
    await pool.run(
        _api.start_session,
        token,
        principal.name,
        principal.via,
        credential,
        settings.session_max_hours * 3600,
    )
    session_of(conn).sign_in(principal.name, principal.role, principal.via, token)


async def end_session(pool: ConsolePool, conn: HTTPConnection) -> None:
    """Sign out: the session's row goes, so a copy of the cookie is no session either."""
    session = session_of(conn)
    if session.token is not None:
        await pool.run(_api.end_session, session.token)
    session.sign_out()


async def _alive(
    settings: ConsoleSettings, pool: ConsolePool, conn: HTTPConnection, name: str, via: str
) -> bool:
    """Whether the session's row says it is still valid: not signed out, not expired, not
    idle, and its user's role and password unchanged since it began."""
    token = session_of(conn).token
    credential = _credential(settings, name, via)
    if token is None or credential is None:
        return False
    idle = settings.session_idle_minutes * 60
    return await pool.run(_api.touch_session, token, name, credential, idle)


async def current_principal(
    settings: ConsoleSettings, pool: ConsolePool, conn: HTTPConnection
) -> Principal | None:
    """The signed-in user of this request, or None.

    The trusted header wins when the request comes from a trusted proxy (and starts a new
    session when it names someone else); from any other address it is ignored. A password
    or dev session is checked against its row in the database (signed out, expired, or its
    user's role or password changed: no session) and the settings (a removed user is
    signed out).
    """
    session = session_of(conn)
    header = settings.trusted_header
    if header and header in conn.headers:
        name = conn.headers[header].strip()
        if not _trusted_peer(settings, conn):
            log.warning(
                "console_untrusted_header",
                header=header,
                peer=conn.client.host if conn.client else None,
            )
        elif name:
            role = _role_of(settings, name) or settings.trusted_role
            user = session.user
            if not user or user.get("name") != name or user.get("via") != "header":
                session.sign_in(name, role, "header")
            return Principal(name, role, "header")
    user = session.user
    if user is None:
        return None
    via = user.get("via")
    if via == "header":
        if header and _trusted_peer(settings, conn):
            role = _role_of(settings, user["name"]) or settings.trusted_role
            return Principal(user["name"], role, "header")
        return None
    if via not in ("password", "dev") or not await _alive(settings, pool, conn, user["name"], via):
        session.sign_out()
        return None
    if via == "dev":
        return Principal(user["name"], "operator", "dev")
    configured = _role_of(settings, user["name"])
    assert configured is not None  # _alive found the user
    return Principal(user["name"], configured, "password")
