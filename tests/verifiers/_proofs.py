"""How a test says what it proves of a scheme: ``@proves("stripe", "docs-twin")``.

The kinds, from the provider's side: ``sdk-signs`` (their SDK signs, we accept),
``sdk-verifies`` (we sign, their SDK accepts), ``vectors`` (their published examples pass;
the test names the source) and ``docs-twin`` (a second implementation written from the
docs inside the test, naming the page). test_providers_proofs.py reads these decorators
from the test files' source and holds each record's ``about.proof`` to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

__all__ = ["ProofKind", "proves"]

ProofKind = Literal["sdk-signs", "sdk-verifies", "vectors", "docs-twin"]
TestT = TypeVar("TestT", bound=Callable[..., object])


def proves(scheme: str, kind: ProofKind) -> Callable[[TestT], TestT]:
    """Mark a test as a proof of ``kind`` for ``scheme``; the test itself is unchanged."""

    def mark(test: TestT) -> TestT:
        return test

    return mark
