"""Fault injection for the test suite, read from ROVERTRAIN_TEST_HOOKS (a JSON object).

Never set in production. Known keys: `crash` / `hang` (session ids whose decoder child
segfaults or hangs), `slowFrameSeconds`, `slowWriteSeconds` (sleep between publication writes),
`failFsync`, `failRename`, `stuckSeconds` (a blocking call in the training loop), and
`slowPhaseSeconds` (sleep before training starts).
"""

from __future__ import annotations

import json
import os
from typing import Any


def test_hooks() -> dict[str, Any]:
    raw = os.environ.get("ROVERTRAIN_TEST_HOOKS")
    if not raw:
        return {}
    try:
        hooks = json.loads(raw)
    except ValueError:
        return {}
    return hooks if isinstance(hooks, dict) else {}
