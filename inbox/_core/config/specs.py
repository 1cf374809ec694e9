"""The grammar of a key/type *spec* (``header:<name>``, ``json:<pointer>``, ``form:<field>``,
``body-sha256``): parsing only, so settings can validate ``key_from`` / ``type_from`` at
start-up without importing the receiving room, which reads requests with them
(``inbox._receiving.extract``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Spec", "SpecKind", "parse_spec"]

SpecKind = Literal["header", "json", "form", "body-sha256"]


@dataclass(frozen=True, slots=True)
class Spec:
    """One place a value can come from; ``arg`` is the header, pointer or field name."""

    kind: SpecKind
    arg: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "body-sha256" else f"{self.kind}:{self.arg}"


def parse_spec(text: str) -> Spec:
    """Parse ``header:<name>``, ``json:<pointer>``, ``form:<field>`` or ``body-sha256``.

    Raises ``ValueError`` naming what is wrong, so a bad setting fails at start-up.
    """
    text = text.strip()
    if text == "body-sha256":
        return Spec("body-sha256")
    kind, sep, arg = text.partition(":")
    if not sep or kind not in ("header", "json", "form"):
        raise ValueError(
            f"{text!r} is not a key/type source; use header:<name>, json:<pointer>, "
            "form:<field> or body-sha256"
        )
    if kind == "header":
        if not arg.strip():
            raise ValueError(f"{text!r}: a header name is required")
        return Spec("header", arg.strip().lower())
    if kind == "json":
        if arg and not arg.startswith("/"):
            raise ValueError(f"{text!r}: a JSON pointer starts with '/' (e.g. json:/id)")
        return Spec("json", arg)
    if not arg:
        raise ValueError(f"{text!r}: a form field name is required")
    return Spec("form", arg)
