"""Discord interactions against discord-interactions, the library Discord's docs point to.
It only verifies, so the SDK proof is one way: what ``inbox send`` posts, its ``verify_key``
accepts (and refuses once changed); the other way is an interaction signed with PyNaCl, as
the docs' example verifies. Its PING handshake is answered here, from the record."""

from __future__ import annotations

import json
import time

import pytest
from discord_interactions import verify_key
from nacl.signing import SigningKey

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, provider
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent
from tests.verifiers.conftest import Ed25519Pair

NOW = 1_700_000_000


def _table(pair: Ed25519Pair) -> dict[str, object]:
    return {"public_keys": [pair.discord_public], "private_key": pair.discord_private}


@proves("discord", "sdk-verifies")
def test_what_inbox_send_posts_as_discord_verifies_in_its_library(
    ed25519_pair: Ed25519Pair,
) -> None:
    sample = sent("discord", now=time.time(), **_table(ed25519_pair))
    signature = sample.headers["x-signature-ed25519"]
    timestamp = sample.headers["x-signature-timestamp"]
    public = ed25519_pair.discord_public
    assert verify_key(sample.body, signature, timestamp, public)
    assert not verify_key(sample.body + b" ", signature, timestamp, public)
    assert not verify_key(sample.body, signature, str(int(timestamp) + 1), public)
    assert json.loads(sample.body)["id"] == sample.key


@proves("discord", "docs-twin")
def test_an_interaction_signed_as_discords_docs_verify_is_accepted() -> None:
    # https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers:
    # Ed25519 over the timestamp header followed by the raw body, checked with PyNaCl's
    # VerifyKey in the docs' Python example; signed here with its SigningKey.
    signing = SigningKey.generate()
    body = b'{"id":"1183416785912680448","type":2,"data":{"name":"ping","type":1}}'
    timestamp = str(NOW)
    signature = signing.sign(timestamp.encode() + body).signature.hex()
    headers = {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": timestamp}
    public = signing.verify_key.encode().hex()
    found = received("discord", headers, body, now=NOW, public_keys=[public])
    assert found == ("1183416785912680448", "ping")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("discord", headers, body + b" ", now=NOW, public_keys=[public])


def test_a_discord_interaction_yields_its_id_and_command_name(
    ed25519_pair: Ed25519Pair, other_ed25519_pair: Ed25519Pair
) -> None:
    sample = sent("discord", now=NOW, **_table(ed25519_pair), sample={"data": {"x": 1}})
    keys = [other_ed25519_pair.discord_public, ed25519_pair.discord_public]  # a move
    found = received("discord", sample.headers, sample.body, now=NOW + 300, public_keys=keys)
    assert found == (sample.key, "hello")
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("discord", sample.headers, sample.body, now=NOW + 301, public_keys=keys)
    with pytest.raises(VerificationError, match="bad_signature"):
        received(
            "discord",
            sample.headers,
            sample.body,
            now=NOW,
            public_keys=[other_ed25519_pair.discord_public],
        )


def _request(body: bytes) -> WebhookRequest:
    return WebhookRequest("POST", "https://x/webhooks/discord", {}, body)


def test_a_ping_is_answered_with_a_pong_and_nothing_else_is() -> None:
    # https://discord.com/developers/docs/interactions/receiving-and-responding: a PING
    # (type 1) is acknowledged with a PONG (type 1).
    handshake = provider("discord").handshake
    assert handshake is not None
    assert handshake(_request(b'{"id":"1","type":1,"application_id":"2"}'), ()) == {"type": 1}
    assert handshake(_request(b'{"id":"1","type":2,"data":{"name":"x"}}'), ()) is None
    assert handshake(_request(b"not json"), ()) is None


def test_a_stored_interaction_is_deferred() -> None:
    assert provider("discord").accepted_reply == (b'{"type":5}', "application/json")


def test_a_public_key_that_is_not_hex_is_refused_at_start_up() -> None:
    from inbox._providers import build_verifier

    with pytest.raises(ValueError, match="64 hex"):
        build_verifier("discord", public_keys=["not-hex"])
