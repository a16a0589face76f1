"""Where a replayed model and the person disagree: pure rules, no server, no torch."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rovertrain.review.timeline import (
    MIN_TICKS,
    Decision,
    decisions_of,
    disagreements,
    tick_disagrees,
)


def tick(t: float, fire: bool, human: bool, values: float = 0.0, sent: float = 0.0) -> Decision:
    entry: dict[str, object] = {"fire": fire, "human": human, "values": {"turn": values}}
    if human:
        entry["humanValues"] = {"turn": sent}
    return Decision(t, True, {"drive": entry})


def test_a_tick_disagrees_when_one_sends_and_the_other_does_not() -> None:
    assert tick_disagrees(tick(0, True, False))
    assert tick_disagrees(tick(0, False, True))
    assert not tick_disagrees(tick(0, False, False))
    assert not tick_disagrees(tick(0, True, True, 0.5, 0.6))  # within a quarter
    assert tick_disagrees(tick(0, True, True, 0.5, -0.5))  # a different command
    assert not tick_disagrees(Decision(0, False, tick(0, True, False).types))  # unusable


def test_stretches_join_short_gaps_and_drop_single_ticks() -> None:
    ticks = [tick(t * 100, t in (3, 4, 5, 7, 8, 20), False) for t in range(30)]
    # 3-5 and 7-8 join across one quiet tick; tick 20 alone is threshold noise
    assert disagreements(ticks) == [(300.0, 800.0)]


def test_the_replay_log_gives_its_prediction_events_in_order() -> None:
    events = [
        {"kind": "model"},
        {"kind": "prediction", "t": 100, "usable": True, "types": {"drive": {"fire": True}}},
        {"kind": "prediction", "t": "bad", "types": {}},
        {"kind": "prediction", "t": 200, "usable": False, "types": {}},
        {"kind": "replayed"},
    ]
    found = decisions_of(events)
    assert [(d.t, d.usable) for d in found] == [(100.0, True), (200.0, False)]


@given(st.lists(st.booleans(), max_size=200))
def test_every_stretch_is_long_enough_and_covers_only_disagreeing_ends(flags: list[bool]) -> None:
    ticks = [tick(index * 100, flag, False) for index, flag in enumerate(flags)]
    stretches = disagreements(ticks)
    for start, end in stretches:
        assert (end - start) / 100 + 1 >= MIN_TICKS
        assert flags[int(start // 100)] and flags[int(end // 100)]
    assert stretches == sorted(stretches)
    for (_, end), (start, _) in itertools.pairwise(stretches):
        assert start - end > 300  # two stretches closer than the merge gap are one
