"""Events, job files and exported folders keep their shape across refactors (additive only).

golden_event_shapes.json was recorded by event_shapes.py on the code before the layering
redesign (b506875); a key may be added, none may vanish or change type.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from event_shapes import leaves, scenario  # noqa: E402


def test_leaves_name_every_path_and_type() -> None:
    found = leaves({"a": [1, {"b": None}], "c": {"d": "x", "e": True}, "f": []})
    assert found == {".a[]: number", ".a[].b: null", ".c.d: string", ".c.e: bool", ".f[]: empty"}


def test_what_the_product_writes_keeps_every_field_it_had(tmp_path: Path) -> None:
    golden = json.loads((HERE / "golden_event_shapes.json").read_text())
    today = scenario(tmp_path)
    lost = {
        name: sorted(set(shape) - set(today.get(name, [])))
        for name, shape in golden.items()
        if set(shape) - set(today.get(name, []))
    }
    assert not lost, json.dumps(lost, indent=1)
