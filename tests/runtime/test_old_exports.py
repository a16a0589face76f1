"""Exports made before keep running as trained: a policy version 4 folder (exported at
b738151, before value levels), driven with today's runtime, decides exactly what it decided
then (`expected.json`, written by that commit's runtime with `write_expected` below)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rovertrain.runtime.policy import RoverPolicy

FOLDER = Path(__file__).parent / "fixtures" / "export-v4"
EXPECTED = FOLDER.parent / "export-v4-expected.json"


def drive(policy: RoverPolicy) -> list[dict[str, Any]]:
    """Twenty ticks of noise pictures with a person's commands between them."""
    rng = np.random.default_rng(4)
    decisions = []
    for tick in range(20):
        t_ms = 1000.0 + 100.0 * tick
        if tick % 3 == 0:
            turn = float(np.round(rng.uniform(-1, 1), 3))
            policy.observe_command(t_ms - 40, "drive", {"speed": 0.5, "turn": turn})
        if tick == 10:
            policy.observe_command(t_ms - 10, "stop")
        frame = rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)
        decision = policy.tick(frame, t_ms)
        decisions.append(
            {
                "fire": decision.fire,
                "steer": decision.steer,
                "probability": decision.probability,
                "values": decision.values,
            }
        )
    return decisions


def write_expected() -> None:
    EXPECTED.write_text(json.dumps(drive(RoverPolicy.load(FOLDER)), indent=1) + "\n")


def test_a_version_4_export_decides_what_it_decided_when_exported() -> None:
    policy = RoverPolicy.load(FOLDER)
    assert policy.spec.policy.written["version"] == 4
    expected = json.loads(EXPECTED.read_text())
    found = drive(policy)
    assert [d["fire"] for d in found] == [d["fire"] for d in expected]
    assert [d["steer"] for d in found] == [d["steer"] for d in expected]
    for now, then in zip(found, expected, strict=True):
        for kind, chance in then["probability"].items():
            assert abs(now["probability"][kind] - chance) < 1e-6
            for name, value in then["values"][kind].items():
                assert abs(now["values"][kind][name] - value) < 1e-6


if __name__ == "__main__":
    write_expected() if sys.argv[1:] == ["write"] else None
