"""Each record's ``about.proof`` is what its tests earn: "sdk-both-ways" needs a test where
the provider's SDK signs and one where it verifies ours, "sdk-verifies" the latter (an SDK
that only verifies), "vectors" a test on published examples, "docs-only" a second
implementation written from the docs in the test. The claim is the strongest level earned.

The proofs are the ``@proves(scheme, kind)`` decorators of tests/verifiers, read from the
source (never imported twice).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from inbox._providers import SCHEMES, provider

HERE = Path(__file__).parent

# Strongest first: the level a scheme claims and the kinds of test that earn it.
LEVELS = (
    ("sdk-both-ways", {"sdk-signs", "sdk-verifies"}),
    ("sdk-verifies", {"sdk-verifies"}),
    ("vectors", {"vectors"}),
    ("docs-only", {"docs-twin"}),
)


def _proofs() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Name)
                    and decorator.func.id == "proves"
                ):
                    assert node.name.startswith("test_"), f"{path.name}:{node.name}"
                    scheme, kind = (ast.literal_eval(arg) for arg in decorator.args)
                    found[scheme].add(kind)
    return found


PROOFS = _proofs()


def earned(kinds: set[str]) -> str:
    for level, needs in LEVELS:
        if needs <= kinds:
            return level
    return "n/a"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_claimed_proof_is_the_one_the_tests_earn(scheme: str) -> None:
    claimed = provider(scheme).about.proof
    kinds = PROOFS.get(scheme, set())
    assert claimed == earned(kinds), f"{scheme} claims {claimed}; its tests prove {kinds}"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_proof_names_its_source(scheme: str) -> None:
    about = provider(scheme).about
    assert bool(about.proof_source) == (about.proof != "n/a")


def test_proofs_name_only_known_schemes() -> None:
    assert set(PROOFS) <= set(SCHEMES)


def test_only_none_proves_nothing() -> None:
    assert [s for s in SCHEMES if provider(s).about.proof == "n/a"] == ["none"]
