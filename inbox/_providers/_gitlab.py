"""GitLab: ``X-Gitlab-Token``, the secret token itself; the body is not signed.

GitLab sends ``Idempotency-Key`` (the same on every retry of one delivery) and
``X-Gitlab-Event-UUID``; older instances send only the latter. Neither is signed, nor is the
``X-Gitlab-Event`` type: see ``_token`` for what a token does and does not prove.
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs
from ._token import token_signer, token_verifier

__all__: list[str] = []

_HEADER = "x-gitlab-token"


def _verifier(c: ProviderConfig) -> Verifier:
    return token_verifier(c, _HEADER)


def _signer(c: ProviderConfig) -> Signer:
    return token_signer(c, _HEADER)


def _sample(_s: Sample) -> dict[str, Any]:
    return {
        "object_kind": "push",
        "ref": "refs/heads/main",
        "project": {"path_with_namespace": "acme/inbox"},
        "commits": [],
    }


PROVIDER = Provider(
    name="gitlab",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="GitLab",
        family="developer-tools",
        signs="nothing: X-Gitlab-Token carries the secret token itself",
        unsigned="the body, Idempotency-Key / X-Gitlab-Event-UUID and X-Gitlab-Event",
        proof="docs-only",
        proof_source="https://docs.gitlab.com/user/project/integrations/webhooks/",
    ),
    key_specs=specs("header:idempotency-key", "header:x-gitlab-event-uuid"),
    type_specs=specs("header:x-gitlab-event"),
    sample=_sample,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="Push Hook",
    dev_secret=dev_token(),
)
