"""`replay --own-history`'s figures: where each rover moved and stood, from the commands alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rovertrain.deploy.own_history import (
    MOVEMENT,
    STOP,
    CommandRole,
    matched_rests,
    moving_at,
    own_history_figures,
    rest_onsets,
)
from rovertrain.deploy.replay_figures import STOP_MATCH_MS

TICKS = np.arange(0, 10_000, 100)


def drive(t: float) -> CommandRole:
    return CommandRole(t, MOVEMENT)


def stop(t: float) -> CommandRole:
    return CommandRole(t, STOP)


def test_a_rover_moves_from_the_tick_after_its_movement_command_until_a_stop() -> None:
    moving = moving_at(
        [drive(50), CommandRole(120, "other"), stop(300), drive(300.5)],
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


def test_rests_pair_within_two_seconds_once_each_as_many_as_can() -> None:
    person = [drive(0), stop(2000), drive(2500), stop(3000), drive(6000)]
    policy = [drive(0), stop(2600), drive(4000), stop(9000)]
    figures = own_history_figures(TICKS, person, policy, 100).to_json()
    # The policy's rest at 2.7 s is within 2 s of both of the person's (2.1 s and 3.1 s) and
    # pairs with the first only; its rest at 9.1 s is no person's.
    assert figures["personRests"] == 2 and figures["restsMatched"] == 1
    assert figures["medianRestOffsetMs"] == 600.0
    assert figures["extraRests"] == 1
    assert figures["personCommandsPerSecond"] == 0.5  # 5 commands in 10 s
    assert figures["commandRateRatio"] == 0.8
    # Taking the nearest rest first would pair 3.0 s with 4.0 s and leave 1.5 s and 4.8 s.
    assert matched_rests(np.asarray([3000.0, 4800.0]), np.asarray([1500.0, 4000.0])) == [
        -1500.0,
        -800.0,
    ]


def test_only_stop_and_movement_commands_within_the_ticks_count() -> None:
    ticks = np.arange(0, 1000, 100)  # one second: [0, 1000)
    person = [drive(-50), CommandRole(200, "other"), CommandRole(300, ""), drive(500), stop(1000)]
    figures = own_history_figures(ticks, person, [drive(0)], 100).to_json()
    assert figures["personCommandsPerSecond"] == 1.0  # the drive at 500 ms only
    assert figures["policyCommandsPerSecond"] == 1.0 and figures["commandRateRatio"] == 1.0


def test_no_tick_no_figure() -> None:
    figures = own_history_figures(np.asarray([]), [drive(0)], [], 100).to_json()
    assert figures["ticks"] == 0 and figures["movingAgreement"] is None
    assert figures["restRecall"] is None and figures["commandRateRatio"] is None


def most_pairs(person: list[float], policy: list[float]) -> int:
    """The most disjoint pairs within the window, by trying every assignment (small lists)."""
    if not person:
        return 0
    first, rest = person[0], person[1:]
    best = most_pairs(rest, policy)  # the first person's rest left unpaired
    for index, onset in enumerate(policy):
        if abs(onset - first) <= STOP_MATCH_MS:
            best = max(best, 1 + most_pairs(rest, policy[:index] + policy[index + 1 :]))
    return best


@given(
    st.lists(st.integers(0, 200), max_size=6, unique=True),
    st.lists(st.integers(0, 200), max_size=6, unique=True),
)
def test_rest_pairing_finds_as_many_pairs_as_any_assignment(
    person_ticks: list[int], policy_ticks: list[int]
) -> None:
    person = sorted(100.0 * tick for tick in person_ticks)
    policy = sorted(100.0 * tick for tick in policy_ticks)
    pairs = matched_rests(np.asarray(person), np.asarray(policy))
    assert len(pairs) == most_pairs(person, policy)
    assert all(abs(offset) <= STOP_MATCH_MS for offset in pairs)


@given(st.lists(st.tuples(st.integers(0, 9_999), st.booleans()), max_size=40))
def test_a_policy_sending_what_the_person_sent_agrees_everywhere(
    sends: list[tuple[int, bool]],
) -> None:
    person = [drive(t) if moves else stop(t) for t, moves in sends]
    same = own_history_figures(TICKS, person, person, 100).to_json()
    assert same["movingAgreement"] == 1.0 and same["extraRests"] == 0
    assert same["restsMatched"] == same["personRests"]
    assert same["medianRestOffsetMs"] in (None, 0.0)


def test_own_history_feeds_back_what_the_rover_sends_as_the_policys() -> None:
    from types import SimpleNamespace
    from typing import Any

    from rovertrain.contracts.command_schema import POLICY
    from rovertrain.deploy.replay import SessionReplay

    observed: list[tuple[Any, ...]] = []
    schema = [
        {"type": "stop", "role": "stop", "values": []},
        {"type": "drive", "role": "movement", "values": ["speed", "turn"]},
    ]
    policy = SimpleNamespace(
        schema=schema,
        observe_command=lambda t, kind, values, by: observed.append((t, kind, values, by)),
    )
    sent: list[tuple[float, str]] = []
    loaded: Any = SimpleNamespace(policy=policy)
    replay = SessionReplay("s", loaded, None, None, None, None, None, sent)  # type: ignore[arg-type]
    drive_now = SimpleNamespace(
        send={"stop": False, "drive": True}, values={"drive": {"speed": 0.5, "turn": -0.25}}
    )
    replay.send(drive_now, 300)  # type: ignore[arg-type]
    stop_wins = SimpleNamespace(send={"stop": True, "drive": True}, values=drive_now.values)
    replay.send(stop_wins, 400)  # type: ignore[arg-type]
    assert observed == [
        (300, "drive", {"speed": 0.5, "turn": -0.25}, POLICY),
        (400, "stop", None, POLICY),
    ]
    assert sent == [(300, "drive"), (400, "stop")]
