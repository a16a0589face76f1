"""`replay --own-history`'s figures: where each rover moved and stood, from the commands alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rovertrain.deploy.own_history import (
    MOVEMENT,
    STOP,
    Sent,
    moving_at,
    own_history_figures,
    rest_onsets,
)

TICKS = np.arange(0, 10_000, 100)


def drive(t: float) -> Sent:
    return Sent(t, MOVEMENT)


def stop(t: float) -> Sent:
    return Sent(t, STOP)


def test_a_rover_moves_from_the_tick_after_its_movement_command_until_a_stop() -> None:
    moving = moving_at(
        [drive(50), Sent(120, "other"), stop(300), drive(300.5)],
        np.asarray([0, 50, 100, 200, 300, 400]),
    )
    # Strictly before the tick: the drive at 50 moves the rover from tick 100; the stop at 300
    # and the drive after it land before tick 400; a horn changes nothing.
    assert moving.tolist() == [False, False, True, True, True, True]
    assert not moving_at([], np.asarray([0, 100])).any()
    assert moving_at([stop(0), drive(10)], np.asarray([100])).tolist() == [True]
    assert moving_at([drive(0), stop(10)], np.asarray([100])).tolist() == [False]


def test_rest_onsets_are_the_ticks_a_moving_rover_stands() -> None:
    moving = np.asarray([False, True, True, False, False, True, False])
    assert rest_onsets(np.arange(7) * 100, moving).tolist() == [300, 600]


def test_a_policy_that_never_stops_matches_none_of_the_persons_rests() -> None:
    person = [drive(0), stop(2000), drive(5000), stop(8000)]
    figures = own_history_figures(TICKS, person, [drive(0)], 100).to_json()
    assert figures["personRests"] == 2 and figures["restsMatched"] == 0
    assert figures["restRecall"] == 0.0 and figures["extraRests"] == 0
    # The person stood at the ticks 2.1-5.0 s (30) and 8.1-9.9 s (19): the policy moved then.
    assert figures["movedWhilePersonStood"] == (30 + 19) / 100
    assert figures["stoodWhilePersonMoved"] == 0.0  # at tick 0 both stand: nothing sent yet


def test_rests_match_within_two_seconds_once_each() -> None:
    person = [drive(0), stop(2000), drive(2500), stop(3000), drive(6000)]
    policy = [drive(0), stop(2600), drive(4000), stop(9000)]
    figures = own_history_figures(TICKS, person, policy, 100).to_json()
    # The policy's one rest (2.7 s) is within 2 s of both of the person's (2.1 s and 3.1 s)
    # and counts for the first only; its rest at 9.1 s is no person's.
    assert figures["personRests"] == 2 and figures["restsMatched"] == 1
    assert figures["medianRestOffsetMs"] == 600.0
    assert figures["extraRests"] == 1
    assert figures["personCommandsPerSecond"] == 0.5  # 5 commands in 10 s
    assert figures["commandRateRatio"] == 0.8


@given(
    st.lists(st.tuples(st.integers(0, 9_999), st.booleans()), max_size=40),
    st.lists(st.tuples(st.integers(0, 9_999), st.booleans()), max_size=40),
)
def test_the_shares_add_up_and_a_policy_sending_as_the_person_agrees(
    person_sends: list[tuple[int, bool]], policy_sends: list[tuple[int, bool]]
) -> None:
    person = [drive(t) if moves else stop(t) for t, moves in person_sends]
    policy = [drive(t) if moves else stop(t) for t, moves in policy_sends]
    figures = own_history_figures(TICKS, person, policy, 100)
    shares = (
        figures.moving_agreement,
        figures.stood_while_person_moved,
        figures.moved_while_person_stood,
    )
    assert abs(sum(share or 0.0 for share in shares) - 1.0) < 1e-9
    assert 0 <= len(figures.matched) <= figures.person_rests
    same = own_history_figures(TICKS, person, person, 100)
    assert same.moving_agreement == 1.0 and same.extra_rests == 0
    assert len(same.matched) == same.person_rests and set(same.matched) <= {0.0}
