"""The signed test request of ``inbox send``: a sample payload, a fresh key, the signature.

Pure (the clock and the id are passed in): the sample is the source's ``sample`` table, else
a small payload in the provider's shape. A fresh idempotency key and the event type are put
where the source's extraction reads them (``inbox._receiving.extract.inject``), so every send
is a new event, whatever ``key_from`` / ``type_from`` say.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from inbox._core.config.settings import SourceSettings
from inbox._providers import Sample, provider, sign_request
from inbox._providers._base import FORM_CONTENT_TYPE
from inbox._receiving.extract import inject
from inbox._receiving.source_config import source_extraction, source_signer

__all__ = ["SampleRequest", "build_sample"]


@dataclass(frozen=True, slots=True)
class SampleRequest:
    url: str
    body: bytes
    headers: dict[str, str]
    key: str


def _content_type(body: bytes, *, form: bool) -> str:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return FORM_CONTENT_TYPE if form else "application/octet-stream"
    return "application/json"


def build_sample(
    source: SourceSettings,
    *,
    url: str,
    now: float,
    body: bytes | None = None,
    event_type: str | None = None,
    msg_id: str | None = None,
    content_type: str | None = None,
) -> SampleRequest:
    """Sign a sample (or ``body``, sent as given) for ``source``, to be posted to ``url``.

    The content type is ``content_type``, else what the body is: JSON when it parses as
    JSON, the provider's form encoding for form schemes, else ``application/octet-stream``.

    Raises ``ConfigError`` when the source cannot sign (e.g. no ``private_key``).
    """
    signer = source_signer(source)
    extraction = source_extraction(source)
    record = provider(source.verifier)
    msg_id = msg_id or record.new_id()
    sample = Sample(msg_id=msg_id, now=now, event_type=event_type or record.sample_type)
    event_type = sample.event_type
    # Injected values below win, so the source's key_from / type_from still decide.
    headers = record.envelope(sample)
    # With a given body, only headers can carry the key and type: the bytes are sent as is.
    payload: dict[str, Any] | list[Any] = (
        copy.deepcopy(source.sample)
        if body is None and source.sample is not None
        else record.sample(sample)
    )
    inject(extraction.key_specs[0], msg_id, payload=payload, headers=headers)
    if extraction.type_specs:
        inject(extraction.type_specs[0], event_type, payload=payload, headers=headers)
    form = record.posts_form
    if body is None:
        if form and isinstance(payload, dict):
            body = urlencode({k: str(v) for k, v in payload.items()}).encode()
        else:
            body = json.dumps(payload, separators=(",", ":")).encode()
    headers["content-type"] = content_type or _content_type(body, form=form)
    # Twilio signs the URL it calls; behind a proxy that is the configured public URL.
    signed_url = source.public_url or url
    signed_body, signature = sign_request(signer, body=body, url=signed_url, now=now, msg_id=msg_id)
    headers.update(signature)
    return SampleRequest(url=url, body=signed_body, headers=headers, key=msg_id)
