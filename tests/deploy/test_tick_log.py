"""`drive --out`'s ticks.ndjson rows (pure: a fabricated rollout, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rovertrain.deploy.tick_log import tick_rows, write_ticks
from rovertrain.runtime.policy import Decision
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.rollout import RolloutTrace


def decision(t_ms: float, stop: float, turn: float, kept: bool = False) -> Decision:
    return Decision(
        t_ms,
        fire={"stop": stop >= 0.5, "drive": False},
        probability={"stop": stop, "drive": 0.1},
        values={"stop": {}, "drive": {"speed": 0.5, "turn": turn}},
        image=np.zeros((1, 3, 2, 2), np.uint8),
        state=np.zeros((1, 4), np.float32),
        steer={"drive": abs(turn) > 0.1},
        kept={"drive": ("turn",)} if kept else {},
    )


def test_each_decision_is_joined_with_where_the_rover_was_and_what_went_out() -> None:
    trace = RolloutTrace("policy", 0.2)
    for k in range(20):  # 200 ms of 10 ms ticks: 0.1 m each, then standing
        trace.s.append(0.1 * (k + 1) if k < 12 else 1.2)
        trace.x.append(0.01 * k)
        trace.moving.append(k < 12)
    trace.commands = [
        SentCommand(0.0, "drive", {"speed": 0.5, "turn": 0.0}),
        SentCommand(0.0, "drive", {"speed": 0.5, "turn": 0.123456}, by="policy"),
        SentCommand(100.0, "stop", None, by="policy"),
    ]
    rows = tick_rows(
        [decision(0.0, 0.01, 0.123456, kept=True), decision(100.0, 0.9, 0.0)],
        trace,
        lambda s: 2 * s,
    )
    first, second = rows
    assert first["t"] == 0.0 and first["s"] == 0.1 and first["curvature"] == 0.2
    assert [item["values"]["turn"] for item in first["sent"]] == [0.0, 0.1235]
    assert first["steer"] == {"drive": True} and first["fire"]["stop"] is False
    assert first["kept"] == {"drive": ["turn"]} and rows[1]["kept"] == {}
    assert second["s"] == 1.1 and second["x"] == 0.1 and second["moving"] is True
    assert second["sent"] == [{"type": "stop"}]
    assert second["probability"] == {"stop": 0.9, "drive": 0.1}


def test_the_file_is_whole_or_absent(tmp_path: Path) -> None:
    path = tmp_path / "ticks.ndjson"
    write_ticks(path, [{"t": 0.0}, {"t": 100.0}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"t": 0.0},
        {"t": 100.0},
    ]
    assert [entry.name for entry in tmp_path.iterdir()] == ["ticks.ndjson"]  # no temporary


def test_a_row_that_is_not_json_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "ticks.ndjson"
    with pytest.raises(TypeError):
        write_ticks(path, [{"t": 0.0}, {"t": object()}])
    assert list(tmp_path.iterdir()) == []
