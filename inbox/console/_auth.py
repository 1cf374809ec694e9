"""Who is signed in: users from the settings, an SSO proxy's trusted header, the session a
one-time link of ``inbox dev`` started (inbox.console._links)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from starlette.requests import HTTPConnection

from inbox._core.logs import get_logger
from inbox._core.settings import ConsoleSettings
from inbox.console._passwords import verify_password
from inbox.console._session import peer_in, session_of

__all__ = ["Principal", "authenticate", "current_principal"]

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


def current_principal(settings: ConsoleSettings, conn: HTTPConnection) -> Principal | None:
    """The signed-in user of this request, or None.

    The trusted header wins when the request comes from a trusted proxy (and starts a new
    session when it names someone else); from any other address it is ignored. A password
    session is checked against the settings again, so a removed user is signed out.
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
    if via == "dev":
        return Principal(user["name"], "operator", "dev")
    if via == "password":
        configured = _role_of(settings, user["name"])
        if configured is None:
            session.sign_out()
            return None
        return Principal(user["name"], configured, "password")
    if via == "header" and header and _trusted_peer(settings, conn):
        return Principal(
            user["name"], _role_of(settings, user["name"]) or settings.trusted_role, "header"
        )
    return None
