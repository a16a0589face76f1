"""Expected levels (policy version 6) sent as levels: each send the level nearest to what the
model expects plus what the sends before it owe, so the sends average the expectation."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rovertrain.contracts.runtime_spec import (
    LEVELS_FORMAT,
    RuntimeSpec,
    RuntimeSpecError,
)
from rovertrain.runtime.policy import level_to_send
from runtime.test_steering import FRAME, policy

TURNS = (-1.0, 0.0, 1.0)


def spread(expected: float, levels: tuple[float, ...], sends: int) -> list[float]:
    sent, owed = [], 0.0
    for _ in range(sends):
        level = level_to_send(expected, owed, levels)
        owed = expected + owed - level
        sent.append(level)
    return sent


@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=6, unique=True),
    st.floats(0, 1),
    st.integers(1, 200),
)
def test_sends_are_levels_that_average_the_expectation(
    levels: list[float], share: float, sends: int
) -> None:
    table = tuple(sorted(levels))
    expected = table[0] + share * (table[-1] - table[0])  # a mix of the levels: in their span
    sent = spread(expected, table, sends)
    assert set(sent) <= set(table)
    widest = max(b - a for a, b in itertools.pairwise(table))
    # what is owed never exceeds half the widest gap: the mean is off by at most that / sends
    assert abs(np.mean(sent) - expected) <= widest / 2 / sends + 1e-9


def test_a_sure_model_sends_its_level_every_time() -> None:
    assert spread(1.0, TURNS, 5) == [1.0] * 5
    assert spread(0.0, TURNS, 5) == [0.0] * 5


def test_a_turn_of_a_third_is_a_tap_every_third_send() -> None:
    assert spread(1 / 3, TURNS, 6) == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def version_6(levels: dict[str, Any]) -> tuple[Any, Any]:
    rover, session = policy(0.15, levels)
    written = dict(rover.spec.policy.written)
    written["output"] = {"values": {"levels": levels, "levelOutput": "expected"}}
    spec = RuntimeSpec.from_json({**written, "threshold": 0.5, "steeringDeadband": 0.15})
    return type(rover)(session, spec), session


def test_the_rover_sends_the_expected_turn_as_taps_and_owes_only_what_it_sent() -> None:
    rover, session = version_6({"drive": {"turn": list(TURNS)}})
    assert rover.spec.format == LEVELS_FORMAT
    session.turn = 0.5
    session.p["drive"] = 0.9
    sent = []
    for tick in range(1, 9):
        decision = rover.tick(FRAME, tick * 100)
        assert decision.send["drive"]
        sent.append(decision.values["drive"]["turn"])
        rover.observe_command(tick * 100, "drive", decision.values["drive"], by="policy")
    assert set(sent) == {0.0, 1.0} and sum(sent) == 4  # half the sends turn: half a turn
    # not sent: nothing is owed for it (the next send starts from where the last one left)
    session.p["drive"] = 0.0
    before = dict(rover.owed)
    quiet = rover.tick(FRAME, 1_000)
    assert not quiet.send["drive"] and rover.owed == before
    rover.reset()
    assert rover.owed == {}


def test_an_export_of_version_5_sends_what_its_graph_gives() -> None:
    rover, session = policy(0.15, {"drive": {"turn": list(TURNS)}})
    assert rover.spec.format != LEVELS_FORMAT  # no levelOutput: a format from before
    session.turn = 1.0  # the most likely level, chosen in the graph
    session.p["drive"] = 0.9
    assert [rover.tick(FRAME, t).values["drive"]["turn"] for t in (100, 200, 300)] == [1.0] * 3


def test_an_unknown_level_output_is_refused() -> None:
    rover, _ = policy(0.15, {"drive": {"turn": list(TURNS)}})
    written = dict(rover.spec.policy.written)
    written["output"] = {"values": {"levels": {"drive": {"turn": [0, 1]}}, "levelOutput": "mode"}}
    with pytest.raises(RuntimeSpecError, match="levelOutput"):
        RuntimeSpec.from_json({**written, "threshold": 0.5})
