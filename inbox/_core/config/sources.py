"""A ``[[sources]]`` entry of ``inbox.toml``: where a webhook comes in, how it is verified,
where its key, type and ordering come from, and how ``inbox send`` signs one. A section like
the others (``sections``), kept apart for its size: a source's checks and secrets.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SecretStr, field_validator, model_validator

from inbox._core.config.schemes import SCHEMES
from inbox._core.config.sections import Section
from inbox._core.config.specs import parse_spec

__all__ = ["SourceSettings"]


def _known_verifier(name: str) -> str:
    # The registry of providers (one line each) decides, not a list kept here as well.
    if name not in SCHEMES:
        known = ", ".join(repr(s) for s in SCHEMES)
        raise ValueError(f"unknown verifier {name!r}; expected one of: {known}")
    return name


VerifierName = Annotated[str, AfterValidator(_known_verifier)]


class SourceSettings(Section):
    """One webhook source: ``POST /webhooks/{name}``, verified by ``verifier``."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    verifier: VerifierName
    secrets: list[SecretStr] = Field(default_factory=list)
    secrets_env: str | None = None
    # A mounted secret (docs/security.md): one per line, or comma-separated.
    secrets_file: Path | None = None
    public_keys: list[str] | dict[str, str] = Field(default_factory=list)
    # The replay window of a signed time; unset, the provider's documented one
    # (`inbox providers` lists each).
    tolerance_seconds: int | None = Field(default=None, ge=0)
    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    public_url: str | None = None
    # Override of where the idempotency key / event type come from:
    # "header:<name>", "json:<json-pointer>", "form:<field>", or "body-sha256".
    key_from: str | None = None
    type_from: str | None = None
    # Scheme-specific settings, e.g. the `hmac` recipe (header, algorithm, encoding, ...).
    options: dict[str, Any] = Field(default_factory=dict)
    # Signing side, for `inbox send` only (the receiver never needs them): the private key of
    # an asymmetric scheme (alipay, wechatpay: PEM; standard-webhooks v1a: whsk_), inline or
    # read from the environment, and a sample payload (a JSON object, or the form's fields)
    # into which `inbox send` puts a fresh key and the event type.
    private_key: SecretStr | None = None
    private_key_env: str | None = None
    sample: dict[str, Any] | None = None
    # Ordered processing (docs/ordering.md): events with the same value of `ordering_key`
    # (a spec, as key_from) run one at a time, in the order of `order_by` (a spec of a
    # provider timestamp; arrival when unset, and arrival breaks ties); `on_dead` says
    # whether a dead letter holds its key's followers ("hold") or lets them go on.
    ordering_key: str | None = None
    order_by: str | None = None
    on_dead: Literal["hold", "continue"] | None = None

    @field_validator("key_from", "type_from")
    @classmethod
    def _valid_spec(cls, value: str | None) -> str | None:
        if value is not None:
            parse_spec(value)  # raises ValueError with the accepted forms
        return value

    @model_validator(mode="after")
    def _valid_ordering(self) -> SourceSettings:
        # Here rather than in a field validator, so the message names the source: a list
        # entry's location is only its index.
        for field in ("ordering_key", "order_by"):
            value = getattr(self, field)
            if value is None:
                continue
            try:
                spec = parse_spec(value)
            except ValueError as exc:
                raise ValueError(f"source {self.name!r}, {field}: {exc}") from None
            if spec.kind == "body-sha256":
                raise ValueError(
                    f"source {self.name!r}, {field} = {value!r}: the body's hash differs for"
                    " every event, so it cannot order them; use header:, json: or form:"
                )
        if self.ordering_key is None:
            for field in ("order_by", "on_dead"):
                if getattr(self, field) is not None:
                    raise ValueError(
                        f"source {self.name!r}, {field}: applies to ordered sources only;"
                        ' set ordering_key too (say, ordering_key = "json:/data/object/id")'
                    )
        return self

    @property
    def dead_policy(self) -> Literal["hold", "continue"] | None:
        """What a dead letter does to its key: None for an unordered source."""
        if self.ordering_key is None:
            return None
        return self.on_dead or "hold"

    def secret_values(self) -> list[str]:
        """The active secrets: those in the file, then a comma-separated ``secrets_env``,
        then those of ``secrets_file``."""
        values = [s.get_secret_value() for s in self.secrets]
        if self.secrets_env:
            from_env = os.environ.get(self.secrets_env, "")
            values.extend(v.strip() for v in from_env.split(",") if v.strip())
        if self.secrets_file:
            from inbox._core.config.secrets import read_secrets_file

            values.extend(read_secrets_file(self.secrets_file, self.name))
        return values

    def private_key_value(self) -> str | None:
        """The signing key: the one in the file, else the ``private_key_env`` variable."""
        if self.private_key is not None:
            return self.private_key.get_secret_value()
        if self.private_key_env:
            return os.environ.get(self.private_key_env) or None
        return None
