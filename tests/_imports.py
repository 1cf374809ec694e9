"""Which modules a fresh interpreter has loaded after some code: for the tests that pin what
an import costs a host app (never timed, see tests/test_import_cost.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable


def loaded_after(code: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` in ``sys.modules`` once a fresh interpreter has run ``code`` (this
    test process has loaded everything already)."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps([n for n in {list(names)!r} if n in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return list(json.loads(result.stdout))
