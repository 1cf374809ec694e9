"""The receiver's decisions, free of I/O and of any web framework.

One request goes through four steps; the shells in ``inbox._receiving.receive`` (sync and
async) do the I/O between them, and every adapter (ASGI, Django, Flask) calls those shells.
What the steps hand on is ``inbox._receiving.delivery``'s:

1. ``admit``: is the source known, is the announced body small enough? (before any read)
2. the shell streams the body into a ``BodyCollector``, stopping at the source's limit;
3. ``prepare``: verify the signature, answer a handshake, find the key and type -> a
   ``PendingWrite`` or a reply;
4. the shell writes; ``written`` / ``write_failed`` turn the outcome into the reply.

Every reply is counted (``ReceiverMetrics``) and logged here, so the adapters cannot differ.
The precise reason for a refusal goes to logs and metrics, never to the caller, except
after a valid signature (a 400 says what is missing: only the provider can see it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

from inbox._core.config.settings import Settings, SourceSettings
from inbox._core.database.pooler import pooler_hint
from inbox._core.errors import VerificationError
from inbox._core.logs import get_logger
from inbox._providers import HandshakeReply, Provider, WebhookRequest, provider
from inbox._providers._provider import GetHandshakeKeys
from inbox._receiving.delivery import PendingWrite, ReceiverResponse, ReceivingSource, json_reply
from inbox._receiving.extract import Extracted
from inbox._receiving.metrics import UNKNOWN_SOURCE_LABEL, ReceiverMetrics
from inbox._receiving.source_config import (
    source_extraction,
    source_verifier,
    source_verify_token,
)
from inbox._writing.plan import MAX_EVENT_TYPE_LENGTH, MAX_ORDERING_KEY_LENGTH, WriteResult

__all__ = ["Receiver"]

log = get_logger("inbox.receiver")

# Seconds a provider is asked to wait before retrying after a 503.
RETRY_AFTER_SECONDS = 5


def _announced_length(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("content-length", "").strip()
    return int(raw) if raw.isdigit() and raw.isascii() else None


def _warn_if_key_unsigned(source: SourceSettings, record: Provider) -> None:
    """One line when the key comes from a header the signature does not cover: a captured
    delivery re-sent with a new id would verify and be a new event."""
    if source.key_from is not None or record.unsigned_key_header is None:
        return
    header = record.unsigned_key_header(source.options)
    if header is not None:
        log.warning(
            "source_key_unsigned",
            source=source.name,
            header=header,
            hint='add {id} to signed_content, or set key_from = "body-sha256" so that a'
            " re-sent body is a duplicate whatever its id (docs/security.md)",
        )


class Receiver:
    """The receiving rules of a set of sources; one instance serves every request.

    ``clock`` (Unix seconds) is what timestamps are checked against; tests may pin it.
    Configuration mistakes raise ``ConfigError`` here, at start-up.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        metrics: ReceiverMetrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics if metrics is not None else ReceiverMetrics()
        self.write_timeout_seconds = settings.receiver.write_timeout_seconds
        self._clock = clock
        self._redact = frozenset(h.lower() for h in settings.receiver.redact_headers)
        self._sources: dict[str, ReceivingSource] = {}
        for source in settings.sources:
            self._sources[source.name] = ReceivingSource(
                name=source.name,
                verifier_name=source.verifier,
                verifier=source_verifier(source),
                provider=provider(source.verifier),
                extraction=source_extraction(source),
                max_body_bytes=source.max_body_bytes,
                on_dead=source.dead_policy,
                secrets=tuple(source.secret_values()),
                verify_token=source_verify_token(source),
                options=source.options,
            )
            if self._sources[source.name].provider.unverified:
                log.warning(
                    "unverified_source_configured",
                    source=source.name,
                    hint="verifier 'none' accepts anything: use it for trusted internal senders",
                )
            _warn_if_key_unsigned(source, self._sources[source.name].provider)

    @property
    def sources(self) -> Mapping[str, ReceivingSource]:
        """The configured sources by name, ready to receive."""
        return self._sources

    # -- step 1 ---------------------------------------------------------------------------

    def admit(
        self, source_name: str, headers: Mapping[str, str]
    ) -> ReceivingSource | ReceiverResponse:
        """Before reading the body: the source, or a 404 / 413 reply.

        ``headers`` are lower-cased (``normalise_headers``).
        """
        source = self._sources.get(source_name)
        if source is None:
            return self._refuse(
                UNKNOWN_SOURCE_LABEL, 404, "unknown_source", "not_found", detail=source_name[:100]
            )
        announced = _announced_length(headers)
        if announced is not None and announced > source.max_body_bytes:
            return self.body_too_large(source)
        return source

    def body_too_large(self, source: ReceivingSource) -> ReceiverResponse:
        """The 413 reply for a body past ``source``'s ``max_body_bytes``, counted."""
        return self._refuse(
            source.name,
            413,
            "body_too_large",
            "too_large",
            extra={"limit_bytes": source.max_body_bytes},
        )

    def challenge(
        self, source_name: str, *, url: str, headers: Mapping[str, str]
    ) -> ReceiverResponse | None:
        """A GET to a source: its scheme's GET handshake answered (200, text/plain) or
        refused (403); None when the source is unknown or its scheme has none, for the
        adapter's 405, as for any method but POST. Nothing is read, nothing stored."""
        source = self._sources.get(source_name)
        if source is None or source.provider.get_handshake is None:
            return None
        request = WebhookRequest(method="GET", url=url, headers=headers, body=b"")
        keys = GetHandshakeKeys(source.verify_token, source.secrets, source.options)
        try:
            answer = source.provider.get_handshake(request, keys)
        except VerificationError as exc:
            # The reason only: never the token, nor what the request offered in its place.
            return self._refuse(source.name, 403, exc.reason, "forbidden")
        return self._handshake(source, answer)

    # -- step 3 ---------------------------------------------------------------------------

    def prepare(
        self,
        source: ReceivingSource,
        *,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> PendingWrite | ReceiverResponse:
        """Verify, then find the key and type: the write to make, or the reply to send."""
        request = WebhookRequest(method=method, url=url, headers=headers, body=body)
        try:
            source.verifier.verify(request, now=self._clock())
        except VerificationError as exc:
            return self._refuse(source.name, 401, exc.reason, "unauthorized")
        handshake = source.provider.handshake
        if handshake is not None and (reply := handshake(request, source.secrets)) is not None:
            # A signed handshake (Slack's url_verification, Discord's PING) is no event: it
            # is answered before the key is looked for, as most carry an id, never stored.
            return self._handshake(source, reply)
        found = source.extraction.read(request)
        key, event_type = found.key, found.event_type
        if key is None:
            # The signature verified: the sender is the provider, and may learn what is
            # missing (unlike a 401, whose reason would help a forger).
            return self._refuse(
                source.name,
                400,
                "no_idempotency_key",
                "bad_request",
                extra={
                    "error": "no_idempotency_key",
                    "detail": f"no idempotency key in the request (looked at {found.key_sought});"
                    " the source's key_from setting says where else to look",
                },
            )
        if event_type is not None and (
            len(event_type) > MAX_EVENT_TYPE_LENGTH or "\x00" in event_type
        ):
            event_type = None  # the type is a convenience; an odd one must not lose the event
        stored = {
            name: value
            for name, value in headers.items()
            if name not in self._redact and "\x00" not in name and "\x00" not in value
        }
        if source.on_dead is None:
            return PendingWrite(source, key, event_type, body, stored)
        ordering_key, order_at = self._ordering(source, key, found)
        return PendingWrite(source, key, event_type, body, stored, ordering_key, order_at)

    def _handshake(self, source: ReceivingSource, reply: HandshakeReply) -> ReceiverResponse:
        self.metrics.observe(source.name, "handshake")
        log.info("handshake_answered", source=source.name, provider=source.verifier_name)
        if isinstance(reply, str):
            body = reply.encode()
            return ReceiverResponse(200, body, "text/plain; charset=utf-8", "handshake")
        return json_reply(200, reply, outcome="handshake")

    def _ordering(
        self, source: ReceivingSource, key: str, found: Extracted
    ) -> tuple[str | None, datetime | None]:
        """The ordering key and timestamp of a delivery of an ordered source. A spec that
        finds nothing usable never loses the event: it is processed unordered (no key) or
        ordered by arrival (no timestamp), counted and logged."""
        ordering_key = found.ordering_key
        if ordering_key is not None and (
            len(ordering_key) > MAX_ORDERING_KEY_LENGTH or "\x00" in ordering_key
        ):
            ordering_key = None
        if ordering_key is None:
            self._unmatched(source, key, "ordering_key", "processed unordered")
            return None, None
        if source.extraction.order_spec is not None and found.order_at is None:
            self._unmatched(source, key, "order_by", "ordered by arrival")
        return ordering_key, found.order_at

    def _unmatched(self, source: ReceivingSource, key: str, field: str, note: str) -> None:
        spec = getattr(
            source.extraction, "ordering_spec" if field == "ordering_key" else "order_spec"
        )
        self.metrics.unordered.labels(source=source.name, field=field).inc()
        log.warning(f"{field}_unmatched", source=source.name, key=key, spec=str(spec), note=note)

    # -- step 4 ---------------------------------------------------------------------------

    def written(
        self, pending: PendingWrite, result: WriteResult, seconds: float
    ) -> ReceiverResponse:
        """The write committed (or the key was already there): acknowledge."""
        name = pending.source.name
        outcome = "accepted" if result.is_new else "duplicate"
        self.metrics.observe_write(name, seconds)
        self.metrics.observe(name, outcome)
        # Debug, not info: a line for every acknowledged delivery is an access log (the
        # event itself is in the log table, its count in the metrics), and rendering it cost
        # `inbox serve` a sixth of its CPU under load. Refusals and failures stay warnings.
        log.debug(
            f"webhook_{outcome}",
            source=name,
            event_id=result.event_id,
            key=pending.key,
            event_type=pending.event_type,
        )
        headers = {"inbox-event-id": str(result.event_id)}
        if (own := pending.source.provider.accepted_reply) is not None:
            body, content_type = own  # e.g. Alipay retries until the body is exactly "success"
            return ReceiverResponse(
                200, body, content_type, outcome, event_id=result.event_id, headers=headers
            )
        # The body json.dumps would write, formatted: the reply to every acknowledged
        # delivery, where the encoder's machinery was a noticeable share of the CPU.
        body = b'{"status":"%s","event_id":%d}' % (outcome.encode(), result.event_id)
        return ReceiverResponse(
            200, body, "application/json", outcome, event_id=result.event_id, headers=headers
        )

    def write_failed(self, pending: PendingWrite, reason: str, error: str) -> ReceiverResponse:
        """The write raised or timed out: 503 (the provider retries), or 400 for bad input.

        ``reason`` is ``database_unavailable``, ``write_timeout`` or ``invalid_write``.
        """
        name = pending.source.name
        if reason == "invalid_write":
            log.warning("webhook_rejected", source=name, reason=reason, status=400, error=error)
            self.metrics.observe(name, "bad_request", reason)
            return json_reply(
                400, {"error": "invalid_idempotency_key", "detail": error}, outcome="bad_request"
            )
        fix = pooler_hint(error)
        log.error(
            "webhook_write_failed",
            source=name,
            key=pending.key,
            reason=reason,
            error=error,
            **({"fix": fix} if fix else {}),
        )
        self.metrics.observe(name, "unavailable", reason)
        return json_reply(
            503,
            {"error": "unavailable", "detail": "the inbox could not store the webhook; retry"},
            outcome="unavailable",
            reason=reason,
            headers={"retry-after": str(RETRY_AFTER_SECONDS)},
        )

    def _refuse(
        self,
        source_label: str,
        status: int,
        reason: str,
        outcome: str,
        *,
        detail: str | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> ReceiverResponse:
        self.metrics.observe(source_label, outcome, reason)
        log.warning(
            "webhook_rejected",
            source=detail if source_label == UNKNOWN_SOURCE_LABEL else source_label,
            reason=reason,
            status=status,
        )
        payload: dict[str, object] = {"error": outcome}
        payload.update(extra or {})
        return json_reply(status, payload, outcome=outcome, reason=reason)
