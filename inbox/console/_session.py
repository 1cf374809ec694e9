"""Signed-cookie sessions and the headers every console response carries.

The session is a small dict signed with the console's secret key (itsdangerous): who is
signed in, how, the CSRF token, when it was last used, and for a password or dev sign-in
the token of its row in the database (inbox.console._auth checks that row on every
request, so signing out ends the session everywhere). The idle expiry is also checked
against the time inside the signed payload, and every request moves it forward.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
from collections.abc import Sequence
from ipaddress import IPv4Network, IPv6Network
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SECURITY_HEADERS", "Session", "SessionMiddleware", "peer_in", "session_of"]

COOKIE = "inbox_console"

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self';"
        " frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


class Session:
    """The request's session: ``data`` is what the cookie will hold (empty = no cookie)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        if "csrf" not in self.data:
            self.data["csrf"] = secrets.token_urlsafe(32)

    @property
    def csrf(self) -> str:
        return str(self.data["csrf"])

    @property
    def user(self) -> dict[str, str] | None:
        user = self.data.get("user")
        return user if isinstance(user, dict) else None

    @property
    def token(self) -> str | None:
        """The token of the session's row in the database (password and dev sessions)."""
        token = self.data.get("token")
        return token if isinstance(token, str) else None

    def sign_in(self, name: str, role: str, via: str, token: str | None = None) -> None:
        """A fresh session for the user: a new CSRF token, so none issued before survives."""
        self.data = {"user": {"name": name, "role": role, "via": via}}
        if token is not None:
            self.data["token"] = token
        self.data["csrf"] = secrets.token_urlsafe(32)

    def sign_out(self) -> None:
        self.data = {"csrf": secrets.token_urlsafe(32)}


def peer_in(conn: HTTPConnection, networks: Sequence[IPv4Network | IPv6Network]) -> bool:
    """Whether the connecting peer's address is in one of ``networks``."""
    try:
        address = ipaddress.ip_address(conn.client.host if conn.client else "")
    except ValueError:
        return False
    return any(address in network for network in networks)


def session_of(conn: HTTPConnection) -> Session:
    session = conn.scope.get("inbox.console.session")
    assert isinstance(session, Session), "SessionMiddleware is not installed"
    return session


class SessionMiddleware:
    """Loads the session from its cookie, writes it back on every response, and adds the
    security headers. The cookie is HttpOnly, SameSite=Strict, scoped to the console's
    path, and Secure whenever the request came over https."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        secret_key: str,
        idle_seconds: float,
        trusted_proxies: Sequence[IPv4Network | IPv6Network] = (),
    ) -> None:
        self.app = app
        self.trusted_proxies = tuple(trusted_proxies)
        self.idle_seconds = idle_seconds
        self.serializer = URLSafeSerializer(secret_key, salt="pg-inbox console session")

    def _load(self, cookie: str | None) -> dict[str, Any]:
        if not cookie:
            return {}
        try:
            data = self.serializer.loads(cookie)
        except BadSignature:
            return {}
        if not isinstance(data, dict):
            return {}
        seen = data.pop("seen", 0)
        if not isinstance(seen, int | float) or time.time() - seen > self.idle_seconds:
            return {}  # idle too long: signed out (a new CSRF token comes with the new one)
        return data

    def _https(self, conn: HTTPConnection) -> bool:
        """Over https: directly, or as a trusted proxy that ended TLS says (X-Forwarded-Proto
        is believed from ``trusted_proxies`` only, like the trusted header)."""
        if conn.url.scheme == "https":
            return True
        forwarded = conn.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        return forwarded == "https" and peer_in(conn, self.trusted_proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        session = Session(self._load(conn.cookies.get(COOKIE)))
        scope["inbox.console.session"] = session
        path = scope.get("root_path") or "/"
        secure = self._https(conn)

        async def send_with_session(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("cache-control", "no-store")
                value = self.serializer.dumps({**session.data, "seen": int(time.time())})
                attributes = [
                    f"{COOKIE}={value}",
                    f"path={path}",
                    f"Max-Age={int(self.idle_seconds)}",
                    "HttpOnly",
                    "SameSite=Strict",
                ]
                if secure:
                    attributes.append("Secure")
                headers.append("set-cookie", "; ".join(attributes))
            await send(message)

        await self.app(scope, receive, send_with_session)
