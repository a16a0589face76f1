"""A superseded stop- or movement-role type shows no 100 ms bin (policy version 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT, SUPERSEDED_WITHOUT_BINS
from rovertrain.contracts.runtime_spec import (
    FRAME_HISTORY_FORMAT,
    SUPERSEDED_FORMAT,
    RuntimeSpec,
    RuntimeSpecError,
)
from rovertrain.runtime.state import (
    FIRST_BIN,
    LONG_RAMP,
    NEVER_SENT,
    SHORT_RAMP,
    StateTracker,
    encode_states,
    motion_slots,
    superseded_motion,
)

SCHEMA = [*initial_schema(), {"type": "horn", "values": [], "role": "other"}]
STOP, DRIVE, HORN = 0, 1, 2
MOTION = motion_slots(SCHEMA)
INF = math.inf


def per_slot(states: np.ndarray) -> np.ndarray:
    return states.reshape(len(states), SLOTS, STATE_FEATURES_PER_SLOT)


def elapsed_row(stop: float, drive: float, horn: float = INF) -> np.ndarray:
    row = np.full((1, SLOTS), INF)
    row[0, [STOP, DRIVE, HORN]] = stop, drive, horn
    return row


def test_motion_slots_are_the_stop_and_movement_roles() -> None:
    assert MOTION.tolist()[:3] == [True, True, False] and not MOTION[3:].any()


@pytest.mark.parametrize(
    ("stop", "drive", "horn", "superseded"),
    [
        (400, 200, INF, [True, False, False]),  # restarted 200 ms ago: the stop is history
        (200, 400, INF, [False, True, False]),  # stopped 200 ms ago: the drive is history
        (400, INF, INF, [False, False, False]),  # only a stop was ever sent
        (300, 300, INF, [False, False, False]),  # sent together: neither is older
        (400, 200, 100, [True, False, False]),  # a horn supersedes nothing ...
        (400, 200, 900, [True, False, False]),  # ... and nothing supersedes it
    ],
)
def test_superseded_motion_table(
    stop: float, drive: float, horn: float, superseded: list[bool]
) -> None:
    assert superseded_motion(elapsed_row(stop, drive, horn), MOTION)[0, :3].tolist() == superseded


def test_the_stop_before_a_restart_no_longer_shows_its_keepalive_timing() -> None:
    """The case that made policies creep stop-go: a stop 400 ms ago (a person's keepalive
    re-sends it now) is followed by a drive 200 ms ago."""
    values = np.zeros((1, SLOTS, VALUES), dtype=np.float32)
    values[0, DRIVE, :2] = 0.5, -0.25
    blocked = per_slot(encode_states(elapsed_row(400, INF), values, MOTION))[0]
    assert blocked[STOP, SHORT_RAMP] == pytest.approx(0.4) and blocked[STOP, FIRST_BIN + 4] == 1
    restarted = per_slot(encode_states(elapsed_row(400, 200), values, MOTION))[0]
    assert restarted[STOP, SHORT_RAMP] == 1.0 and not restarted[STOP, FIRST_BIN:].any()
    # How long the rover has been driving again stays: the long ramp, 400 ms of 10 s.
    assert restarted[STOP, LONG_RAMP] == pytest.approx(0.04) and restarted[STOP, NEVER_SENT] == 0
    assert restarted[DRIVE, FIRST_BIN + 2] == 1 and restarted[DRIVE, :2].tolist() == [0.5, -0.25]


elapsed_strategy = st.lists(
    st.one_of(st.just(INF), st.floats(0, 30_000, allow_nan=False)), min_size=SLOTS, max_size=SLOTS
)


@settings(max_examples=200, deadline=None)
@given(st.lists(elapsed_strategy, min_size=1, max_size=6), st.data())
def test_only_the_superseded_slots_change_and_only_their_fine_timing(rows, data) -> None:
    elapsed = np.array(rows, dtype=np.float64)
    motion = np.array(data.draw(st.lists(st.booleans(), min_size=SLOTS, max_size=SLOTS)))
    values = np.random.default_rng(len(rows)).uniform(-1, 1, (len(rows), SLOTS, VALUES))
    values = values.astype(np.float32)
    plain = per_slot(encode_states(elapsed, values))
    encoded = per_slot(encode_states(elapsed, values, motion))
    superseded = superseded_motion(elapsed, motion)
    np.testing.assert_array_equal(encoded[~superseded], plain[~superseded])
    # Superseded: the short ramp reads 1 and no bin is set; values, neverSent, long ramp stay.
    kept = np.r_[0:SHORT_RAMP, LONG_RAMP]
    np.testing.assert_array_equal(encoded[superseded][:, kept], plain[superseded][:, kept])
    assert (encoded[superseded][:, SHORT_RAMP] == 1.0).all()
    assert not encoded[superseded][:, FIRST_BIN:].any()
    # Never more than the motion slots, never the newest of them, never one never sent.
    assert not (superseded & ~motion[None, :]).any()
    assert not (superseded & ~np.isfinite(elapsed)).any()
    among = np.where(motion[None, :], elapsed, INF)
    assert not (superseded & (elapsed == among.min(axis=1, keepdims=True))).any()


def test_a_tracker_for_an_older_model_keeps_the_elapsed_times() -> None:
    older, current = StateTracker(SCHEMA, superseded=False), StateTracker(SCHEMA)
    for tracker in (older, current):
        tracker.observe(0.0, "stop", {})
        tracker.observe(200.0, "drive", {"speed": 0.5, "turn": 0.0})
    before = per_slot(older.state_at(400.0)[None])[0]
    after = per_slot(current.state_at(400.0)[None])[0]
    assert before[STOP, FIRST_BIN + 4] == 1 and not after[STOP, FIRST_BIN:].any()


def spec_document(state_extra: dict[str, object]) -> dict[str, object]:
    return {
        "format": FRAME_HISTORY_FORMAT,
        "version": 3,
        "input": {
            "image": {"width": 96, "height": 72, "frameHistory": 2},
            "state": {"size": SLOTS * STATE_FEATURES_PER_SLOT, **state_extra},
            "tickMs": 100,
        },
        "slots": SLOTS,
        "valuesPerSlot": VALUES,
        "schema": SCHEMA,
        "threshold": 0.5,
        "steeringDeadband": 0.1,
    }


def test_the_runtime_spec_says_how_to_build_the_state() -> None:
    older = RuntimeSpec.from_json(spec_document({}))
    assert (
        older.policy.input.state.superseded_without_bins is False
        and older.to_json()["format"] == FRAME_HISTORY_FORMAT
    )
    current = RuntimeSpec.from_json(spec_document({"superseded": SUPERSEDED_WITHOUT_BINS}))
    assert current.policy.input.state.superseded_without_bins is True
    written = current.to_json()
    assert written["format"] == SUPERSEDED_FORMAT
    assert RuntimeSpec.from_json(written).policy.input.state.superseded_without_bins is True
    with pytest.raises(RuntimeSpecError, match="superseded"):
        RuntimeSpec.from_json(spec_document({"superseded": "something newer"}))


def test_the_runtime_builds_the_state_its_model_was_trained_on() -> None:
    """An export of policy version 3 or before gets the elapsed bins as it was trained on;
    a version-4 export gets the superseded stop without them."""
    from rovertrain.runtime.policy import RoverPolicy

    frame = np.zeros((72, 96, 3), np.uint8)
    stop_bins = {}
    for name, extra in (("older", {}), ("current", {"superseded": SUPERSEDED_WITHOUT_BINS})):
        policy = RoverPolicy(None, RuntimeSpec.from_json(spec_document(extra)))
        policy.observe_command(0.0, "stop")
        policy.observe_command(200.0, "drive", {"speed": 0.5, "turn": 0.0})
        _, state = policy.inputs(frame, 400.0)
        stop_bins[name] = per_slot(state)[0, STOP, FIRST_BIN:].tolist()
    assert stop_bins["older"][4] == 1.0 and not any(stop_bins["current"])
