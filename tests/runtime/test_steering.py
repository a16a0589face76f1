"""Steering between the events: a driving policy re-sends the movement command it executes
when its predicted values move more than the deadband, whether or not its event head fires."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.contracts.runtime_spec import RuntimeSpec, RuntimeSpecError
from rovertrain.runtime.policy import RoverPolicy, sent_types, start_type, steering_type

SCHEMA = [*initial_schema(), {"type": "horn", "values": [], "role": "other"}]
ROLES = {"stop": "stop", "drive": "movement", "horn": "other", "crawl": "movement"}
QUIET = {"stop": False, "drive": False, "horn": False}
FRAME = np.zeros((72, 96, 3), dtype=np.uint8)


def predicted(turn: float, speed: float = 0.5) -> dict[str, dict[str, float]]:
    return {"stop": {}, "drive": {"speed": speed, "turn": turn}, "horn": {}}


@pytest.mark.parametrize(
    ("fire", "values", "executing", "deadband", "expected"),
    [
        (QUIET, predicted(0.3), ("drive", {"speed": 0.5, "turn": 0.0}), 0.15, "drive"),
        (QUIET, predicted(0.1), ("drive", {"speed": 0.5, "turn": 0.0}), 0.15, None),
        (QUIET, predicted(0.0, 0.8), ("drive", {"speed": 0.5, "turn": 0.0}), 0.15, "drive"),
        # Exactly the deadband away is not more than it.
        (QUIET, predicted(0.25), ("drive", {"speed": 0.5, "turn": 0.1}), 0.15, None),
        # A value the executed command left out counts as 0 (what the rover does with it).
        (QUIET, predicted(0.3), ("drive", {"speed": 0.5}), 0.15, "drive"),
        # Fired already: the event head sends it.
        (
            {**QUIET, "drive": True},
            predicted(0.9),
            ("drive", {"speed": 0.5, "turn": 0}),
            0.15,
            None,
        ),
        # A firing stop wins: no steering past it.
        ({**QUIET, "stop": True}, predicted(0.9), ("drive", {"speed": 0.5, "turn": 0}), 0.15, None),
        # An `other` type firing does not stop the steering.
        (
            {**QUIET, "horn": True},
            predicted(0.9),
            ("drive", {"speed": 0.5, "turn": 0}),
            0.15,
            "drive",
        ),
        # Another movement type fires: it replaces the executed one, nothing to steer.
        (
            {**QUIET, "crawl": True},
            {**predicted(0.9), "crawl": {"speed": 0.1}},
            ("drive", {"speed": 0.5, "turn": 0}),
            0.15,
            None,
        ),
        # Stopped (or nothing sent yet): only the event head restarts the rover.
        (QUIET, predicted(0.9), None, 0.15, None),
        # 0 turns it off.
        (QUIET, predicted(0.9), ("drive", {"speed": 0.5, "turn": 0.0}), 0.0, None),
    ],
)
def test_steering_type(
    fire: dict[str, bool],
    values: dict[str, dict[str, float]],
    executing: tuple[str, dict[str, float]] | None,
    deadband: float,
    expected: str | None,
) -> None:
    assert steering_type(fire, values, ROLES, executing, deadband) == expected


class ScriptedSession:
    """Stands in for onnxruntime: the next (probabilities, drive turn) it is to answer."""

    def __init__(self) -> None:
        self.p = {"stop": 0.0, "drive": 0.0, "horn": 0.0}
        self.turn = 0.0

    def run(self, _outputs: Any, _feeds: Any) -> tuple[np.ndarray, np.ndarray]:
        logits = np.full((1, SLOTS), -30.0, dtype=np.float32)
        for slot, kind in enumerate(("stop", "drive", "horn")):
            p = min(max(self.p[kind], 1e-9), 1 - 1e-9)
            logits[0, slot] = np.log(p / (1 - p))
        values = np.zeros((1, SLOTS, VALUES), dtype=np.float32)
        values[0, 1, :2] = (0.5, self.turn)
        return logits, values


def policy(
    deadband: float | None,
    levels: dict[str, Any] | None = None,
    resend_after: Any = None,
    start: float | None = None,
    event_weights: Any = None,
) -> tuple[RoverPolicy, ScriptedSession]:
    spec: dict[str, Any] = {
        "schema": SCHEMA,
        "threshold": 0.5,
        "input": {"tickMs": 100, "state": {"size": 136}, "image": {"width": 96, "height": 72}},
        "slots": 8,
        "valuesPerSlot": 4,
    }
    if deadband is not None:
        spec["steeringDeadband"] = deadband
    if levels is not None:
        spec["output"] = {"values": {"levels": levels}}
    if resend_after is not None:
        spec.setdefault("output", {})["resendAfterMs"] = resend_after
    if start is not None:
        spec["startThreshold"] = start
    if event_weights is not None:
        spec.setdefault("output", {})["eventWeights"] = event_weights
    session = ScriptedSession()
    return RoverPolicy(session, RuntimeSpec.from_json(spec)), session


def test_the_policy_steers_from_what_was_sent_before_the_tick() -> None:
    rover, session = policy(0.15)
    session.turn = 0.4
    assert rover.tick(FRAME, 0).send == QUIET  # nothing sent yet
    rover.observe_command(50, "drive", {"speed": 0.5, "turn": 0.0})
    decision = rover.tick(FRAME, 100)
    assert decision.fire == QUIET
    assert decision.steer == {"stop": False, "drive": True, "horn": False}
    assert decision.send == {"stop": False, "drive": True, "horn": False}
    # The re-send is observed at its tick; the next tick compares with it.
    rover.observe_command(100, "drive", decision.values["drive"])
    assert not rover.tick(FRAME, 200).steer["drive"]
    session.turn = 0.0  # the intent swings back: steer again
    assert rover.tick(FRAME, 300).send["drive"]


def test_a_command_sent_at_the_tick_counts_from_the_next_one() -> None:
    rover, session = policy(0.15)
    session.turn = 0.4
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.4})
    rover.observe_command(100, "drive", {"speed": 0.5, "turn": 0.0})
    assert not rover.tick(FRAME, 100).steer["drive"]  # executes 0.4 until after this tick
    assert rover.tick(FRAME, 200).steer["drive"]


def test_after_a_stop_only_the_event_head_restarts_and_reset_forgets() -> None:
    rover, session = policy(0.15)
    session.turn = 0.6
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    rover.observe_command(50, "stop")
    assert rover.tick(FRAME, 100).send == QUIET
    session.p["drive"] = 0.9
    assert rover.tick(FRAME, 200).send["drive"]  # fired
    session.p["drive"] = 0.0
    rover.observe_command(200, "drive", {"speed": 0.5, "turn": 0.0})
    rover.observe_command(250, "horn")  # a signal does not change what the rover executes
    assert rover.tick(FRAME, 300).steer["drive"]
    rover.reset()
    assert rover.tick(FRAME, 0).send == QUIET


def test_reset_forgets_commands_not_yet_counted_and_unknown_types_change_nothing() -> None:
    rover, session = policy(0.15)
    session.turn = 0.6
    rover.observe_command(350, "drive", {"speed": 0.5, "turn": 0.0})  # counts from tick 400
    rover.reset()
    assert rover.tick(FRAME, 400).send == QUIET
    rover.observe_command(450, "drive", {"speed": 0.5, "turn": 0.0})
    assert not rover.observe_command(460, "brake")  # a type the model has no slot for
    assert rover.unknown_commands == 1
    assert rover.tick(FRAME, 500).steer["drive"]


def test_a_firing_stop_is_never_steered_past() -> None:
    rover, session = policy(0.15)
    session.turn, session.p["stop"] = 0.8, 0.7
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    decision = rover.tick(FRAME, 100)
    assert decision.send == {"stop": True, "drive": False, "horn": False}


@pytest.mark.parametrize("deadband", [None, 0.0])
def test_exports_without_a_deadband_fire_from_the_event_head_alone(deadband: float | None) -> None:
    rover, session = policy(deadband)
    session.turn = 0.9
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": -0.9})
    assert rover.steering_deadband == 0.0
    assert rover.tick(FRAME, 100).send == QUIET


@pytest.mark.parametrize(
    ("fire", "standing", "expected"),
    [
        ({"stop": True, "drive": True, "horn": True}, False, ("stop", "horn")),  # moving: safe
        ({"stop": True, "drive": True, "horn": False}, True, ("drive",)),  # standing: go
        ({"stop": True, "drive": False, "horn": False}, True, ("stop",)),
        ({"stop": False, "drive": True, "crawl": True}, False, ("drive",)),  # schema order
        ({"stop": False, "drive": False, "horn": True}, True, ("horn",)),
    ],
)
def test_a_rover_is_sent_one_stop_or_movement_command_at_a_time(
    fire: dict[str, bool], standing: bool, expected: tuple[str, ...]
) -> None:
    sent = sent_types(fire, {}, ROLES, standing)
    assert set(sent) == set(fire)
    assert {kind for kind, on in sent.items() if on} == set(expected)


def test_a_standing_rover_drives_off_when_both_fire_a_moving_one_stops() -> None:
    rover, session = policy(0.15)
    session.p["stop"], session.p["drive"] = 0.64, 0.98  # the way cleared, the stop lingers
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    moving = rover.tick(FRAME, 100)
    assert not moving.standing and moving.send == {"stop": True, "drive": False, "horn": False}
    rover.observe_command(100, "stop")
    standing = rover.tick(FRAME, 200)
    assert standing.standing and standing.send == {"stop": False, "drive": True, "horn": False}
    assert standing.fire == {"stop": True, "drive": True, "horn": False}  # what the gate scores
    rover.reset()
    assert rover.tick(FRAME, 0).send["drive"]  # parked, nothing sent: standing


def test_a_value_sent_at_levels_is_never_steered_only_fired() -> None:
    rover, session = policy(0.15, {"drive": {"turn": [-1.0, 0.0, 1.0]}})
    assert rover.levelled == {"drive": frozenset({"turn"})}
    session.turn = 1.0  # a level away from the executed 0: a person would press a key ...
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    assert not rover.tick(FRAME, 100).send["drive"]  # ... when the event head says so
    session.p["drive"] = 0.9
    assert rover.tick(FRAME, 200).send["drive"]
    session.p["drive"] = 0.0
    rover.observe_command(200, "drive", {"speed": 0.8, "turn": 1.0})  # speed is regressed
    assert rover.tick(FRAME, 300).steer["drive"]  # 0.5 predicted against 0.8 executed


@pytest.mark.parametrize("levels", [[], ["left"], "fast", [True]])
def test_levels_that_are_not_lists_of_numbers_are_refused(levels: Any) -> None:
    with pytest.raises(RuntimeSpecError, match=r"output\.values\.levels"):
        policy(0.15, {"drive": {"turn": levels}})


def test_a_re_send_waits_as_long_as_the_person_waited_a_change_does_not() -> None:
    rover, session = policy(0.15, resend_after={"stop": 200, "drive": 300.0})
    assert rover.resend_after == {"stop": 200.0, "drive": 300.0}
    session.p["stop"] = 0.9
    rover.observe_command(0, "stop")
    early = rover.tick(FRAME, 100)
    assert early.fire["stop"] and early.early == "stop" and not early.send["stop"]
    assert rover.tick(FRAME, 200).send["stop"]  # 200 ms after the last stop: due
    rover.observe_command(200, "stop")
    session.p["stop"], session.p["drive"] = 0.0, 0.9
    assert rover.tick(FRAME, 300).send["drive"]  # a restart is a change: at once
    rover.observe_command(300, "drive", {"speed": 0.5, "turn": 0.0})
    session.turn = 0.02  # within the change tolerance of the turn sent: a re-send
    assert not rover.tick(FRAME, 400).send["drive"]
    session.turn = 0.6  # another turn: a change, sent at once
    assert rover.tick(FRAME, 500).send["drive"]
    session.turn = 0.0
    assert rover.tick(FRAME, 600).send["drive"]  # 300 ms after: due again


def test_an_export_without_re_send_intervals_re_sends_whenever_it_fires() -> None:
    rover, session = policy(0.15)
    assert rover.resend_after == {}
    session.p["stop"] = 0.9
    rover.observe_command(0, "stop")
    assert rover.tick(FRAME, 100).send["stop"]


@pytest.mark.parametrize("after", [{"stop": -1}, {"stop": "200"}, {"stop": True}, [200]])
def test_re_send_intervals_that_are_not_milliseconds_are_refused(after: Any) -> None:
    with pytest.raises(RuntimeSpecError, match="resendAfterMs"):
        policy(0.15, resend_after=after)


@pytest.mark.parametrize(
    ("probability", "above", "expected"),
    [
        ({"stop": 0.0, "drive": 0.4, "horn": 0.9}, 0.0, "drive"),  # a signal never starts
        ({"stop": 0.3, "drive": 0.1, "horn": 0.0}, 0.0, "drive"),  # a likelier stop: it starts
        ({"stop": 0.9, "drive": 0.0}, 0.0, None),  # above, not at
        ({"stop": 0.1, "drive": 0.2, "crawl": 0.2}, 0.0, "drive"),  # a tie: the schema's first
        ({"stop": 0.1, "drive": 0.2, "crawl": 0.3}, 0.0, "crawl"),
        ({"stop": 0.0, "drive": 0.4}, 0.4, None),  # above, not at
        ({"stop": 0.0, "drive": 0.41}, 0.4, "drive"),
        ({"stop": 0.0, "drive": 0.99}, 1.0, None),  # 1: never (exports from before it)
        ({"drive": 0.3}, 0.0, "drive"),  # a schema without a stop
        ({"stop": 0.9, "horn": 0.9}, 0.0, None),  # no movement-role type
    ],
)
def test_start_type(probability: dict[str, float], above: float, expected: str | None) -> None:
    assert start_type(probability, ROLES, above) == expected


def test_a_parked_rover_is_started_until_a_command_was_sent() -> None:
    rover, session = policy(0.15, start=0.0)
    session.p["drive"], session.turn = 0.4, 0.2  # under the threshold: the event head is quiet
    first = rover.tick(FRAME, 0)
    assert first.fire == QUIET and first.start == "drive"
    assert first.send == {"stop": False, "drive": True, "horn": False}
    assert first.values["drive"] == {"speed": 0.5, "turn": pytest.approx(0.2)}
    rover.observe_command(0, "drive", first.values["drive"], by="policy")
    assert rover.tick(FRAME, 100).start is None  # sent: the event head and steering decide
    rover.observe_command(150, "stop")
    after_stop = rover.tick(FRAME, 200)  # standing, but not a start: it waits as trained
    assert after_stop.start is None and after_stop.send == QUIET
    rover.reset()
    assert rover.tick(FRAME, 0).send["drive"]  # a new drive starts again


def test_a_parked_rover_starts_under_a_likelier_stop_and_waits_where_the_stop_fires() -> None:
    rover, session = policy(0.15, start=0.0)
    session.p["stop"], session.p["drive"] = 0.3, 0.05  # nose to a kerb: a stop likelier
    started = rover.tick(FRAME, 0)
    assert started.fire == QUIET and started.start == "drive"
    assert started.send == {"stop": False, "drive": True, "horn": False}
    rover.reset()
    session.p["stop"], session.p["drive"] = 0.7, 0.05  # the stop's own event fires as trained
    waits = rover.tick(FRAME, 0)
    assert waits.start == "drive" and waits.send == {"stop": True, "drive": False, "horn": False}
    rover.observe_command(0, "stop", by="policy")
    session.p["stop"], session.p["drive"] = 0.0, 0.35
    assert rover.tick(FRAME, 100).send == QUIET  # after a stop: only the event head restarts


def test_a_start_goes_with_a_signal_and_a_signal_does_not_end_it() -> None:
    rover, session = policy(0.15, start=0.0)
    session.p["drive"], session.p["horn"] = 0.3, 0.8
    assert rover.tick(FRAME, 0).send == {"stop": False, "drive": True, "horn": True}
    rover.reset()
    session.p["horn"] = 0.0
    rover.observe_command(0, "horn")  # a person honks: the rover is still parked
    assert rover.tick(FRAME, 100).start == "drive"


def test_a_start_adds_nothing_to_what_fired_or_a_person_already_sent() -> None:
    rover, session = policy(0.15, start=0.0)
    session.p["stop"], session.p["drive"] = 0.7, 0.6
    both = rover.tick(FRAME, 0)  # fired: standing, the movement wins (sent_types)
    assert both.send == {"stop": False, "drive": True, "horn": False}
    rover.reset()
    session.p["stop"], session.p["drive"] = 0.0, 0.3
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})  # handed over: sent
    assert rover.tick(FRAME, 0).start is None  # a command at the tick counts as sent
    assert rover.tick(FRAME, 100).start is None


def test_an_engaged_policy_starts_the_rover_and_its_start_is_no_take_over() -> None:
    rover, session = policy(0.15, start=0.0)
    session.p["drive"] = 0.3
    rover.engage()
    decision = rover.tick(FRAME, 0)
    assert decision.send["drive"]
    rover.observe_command(0, "drive", decision.values["drive"], by="policy")
    assert rover.engaged and rover.take_overs == 0
    assert rover.tick(FRAME, 100).start is None


def test_a_start_of_a_spread_level_owes_nothing() -> None:
    """Until a command is observed the start is in `send` at every tick, sent or not (a
    rover loop ticks in the shadow while a person drives): it must not move what the spread
    levels owe, or the first sends after a hand-over differ."""
    levels = {"drive": {"turn": [-1.0, 0.0, 1.0]}}
    rover, session = policy(0.15, levels, start=0.0)
    written = dict(rover.spec.policy.written)
    written["output"] = {"values": {"levels": levels, "levelOutput": "expected"}}
    spec = RuntimeSpec.from_json({**written, "threshold": 0.5, "startThreshold": 0.0})
    rover = RoverPolicy(session, spec)
    session.p["drive"], session.turn = 0.3, 0.4  # expected turn 0.4: a start sends turn 0
    for tick in range(5):
        started = rover.tick(FRAME, tick * 100)
        assert started.start == "drive" and started.values["drive"]["turn"] == 0.0
    assert rover.owed == {}
    session.p["drive"] = 0.9  # fired: the spread carries what the send did not deliver
    fired = rover.tick(FRAME, 500)
    assert fired.values["drive"]["turn"] == 0.0
    assert rover.owed[("drive", "turn")] == pytest.approx(0.4)


@pytest.mark.parametrize("start", [None, 1.0])
def test_exports_without_a_start_threshold_start_from_the_event_head_alone(
    start: float | None,
) -> None:
    rover, session = policy(0.15, start=start)
    session.p["drive"] = 0.49
    assert rover.start_threshold == 1.0
    assert rover.tick(FRAME, 0).send == QUIET
