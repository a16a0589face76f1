from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.command_schema import SLOTS, extended, initial_schema
from rovertrain.contracts.observation import OBS_HEIGHT, OBS_WIDTH, STATE_FEATURES_PER_SLOT
from rovertrain.data.recording import Command
from rovertrain.data.window_set import WindowSetBuilder, window_chunk
from rovertrain.data.windows import (
    CATEGORY_COMMAND,
    CATEGORY_NONE,
    CATEGORY_STOP,
    label_windows,
    summary,
)

SCHEMA = initial_schema()


def test_targets_state_and_categories() -> None:
    ticks = np.array([0, 100, 200, 300, 400], dtype=np.int64)
    commands = [
        Command(50.0, "drive", {"speed": 0.5, "turn": -0.2}),
        Command(120.0, "drive", {"speed": 0.6}),
        Command(199.9, "drive", {"speed": 0.7, "turn": 0.1}),
        Command(300.0, "stop"),
        Command(310.0, "drive", {"speed": 0.0, "turn": 0.0}),
    ]
    labels = label_windows(ticks, commands, SCHEMA)
    drive = 1
    assert labels.fires[:, drive].tolist() == [1, 1, 0, 1, 0]
    assert labels.fires[:, 0].tolist() == [0, 0, 0, 1, 0]
    # The window after each (the gate's early fires), even past the last tick.
    assert labels.fires_next[:, drive].tolist() == [1, 0, 1, 0, 0]
    assert labels.fires_next[:, 0].tolist() == [0, 0, 1, 0, 0]
    late = label_windows(ticks[:3], commands, SCHEMA)  # the stop at 300 follows tick 200
    assert late.fires_next[:, 0].tolist() == [0, 0, 1] and late.fires[:, 0].sum() == 0
    # ... and they stay with their windows through sampling, the pool and its subsets.
    frames = np.zeros((len(ticks), OBS_HEIGHT, OBS_WIDTH, 3), dtype=np.uint8)
    builder = WindowSetBuilder(4)
    builder.add(window_chunk(frames, labels, [0, 2, 3]))
    pool = builder.build().subset(np.array([1, 2]))
    assert pool.fires_next[:, 0].tolist() == [1, 0] and pool.fires[:, 0].tolist() == [0, 1]
    # The last command in the window wins; availability follows its values.
    assert np.allclose(labels.values[1, drive, :2], [0.7, 0.1])
    assert labels.available[1, drive, :2].tolist() == [1, 1]
    assert labels.category.tolist() == [
        CATEGORY_COMMAND, CATEGORY_COMMAND, CATEGORY_NONE, CATEGORY_STOP, CATEGORY_NONE,
    ]  # fmt: skip
    state = labels.states.reshape(len(ticks), SLOTS, -1)
    # At tick 0 nothing was sent before; at 200 the last drive was at 199.9 (strictly before).
    assert state[0, drive, 4] == 1.0
    assert state[2, drive, 4] == 0.0 and np.allclose(state[2, drive, :2], [0.7, 0.1])
    assert np.isclose(state[2, drive, 5], 0.1 / 1000)
    # A command exactly at the tick is not yet in that tick's state.
    assert state[3, 0, 4] == 1.0 and state[4, 0, 4] == 0.0
    # The drive at 310 supersedes the stop at 300: the stop shows no bin and a short ramp of
    # 1 (its long ramp still says 100 ms), the drive 90 ms ago.
    assert state[4, 0, 5] == 1.0 and np.isclose(state[4, 0, 6], 0.01)
    assert not state[4, 0, 7:].any()
    assert np.isclose(state[4, drive, 5], 0.09) and state[4, drive, 7] == 1.0
    # Alone, the stop shows its own time: 100 ms, bin 1.
    alone = label_windows(ticks, commands[:4], SCHEMA).states.reshape(len(ticks), SLOTS, -1)
    assert np.isclose(alone[4, 0, 5], 0.1) and alone[4, 0, 7 + 1] == 1.0


def test_unsupported_commands_are_counted_not_learned() -> None:
    ticks = np.array([0, 100], dtype=np.int64)
    labels = label_windows(ticks, [Command(150.0, "lights", {"on": 1.0})], SCHEMA)
    assert labels.unsupported_command_events == 1
    assert labels.unsupported.tolist() == [False, True]
    assert not labels.fires.any()


def test_schema_extension_appends_only() -> None:
    grown = extended(
        SCHEMA, [("lights", {"on": 1.0}), ("drive", {"boost": 1.0})], {"lights": "other"}
    )
    assert [slot["type"] for slot in grown] == ["stop", "drive", "lights"]
    assert grown[1]["values"] == ["speed", "turn", "boost"]
    assert grown[2]["role"] == "other"
    assert SCHEMA[1]["values"] == ["speed", "turn"]  # the input is not modified


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 50),
    st.lists(
        st.tuples(st.floats(-500, 6000, allow_nan=False), st.sampled_from(["drive", "stop"])),
        max_size=60,
    ),
)
def test_each_command_in_the_span_lands_in_exactly_one_window(first_tick: int, raw) -> None:
    ticks = np.arange(first_tick, first_tick + 40, dtype=np.int64) * 100
    commands = sorted((Command(t, kind, {}) for t, kind in raw), key=lambda c: c.t)
    labels = label_windows(ticks, commands, SCHEMA)
    for slot, kind in enumerate(["stop", "drive"]):
        inside = [c.t for c in commands if c.type == kind and ticks[0] <= c.t < ticks[-1] + 100]
        assert labels.command_event_counts[slot] == len(inside)
        windows_with = {int((t - ticks[0]) // 100) for t in inside}
        assert set(np.flatnonzero(labels.fires[:, slot]).tolist()) == windows_with
    stop_windows = labels.fires[:, 0] == 1
    assert (labels.category[stop_windows] == CATEGORY_STOP).all()


def test_a_policys_commands_are_state_never_targets() -> None:
    """Issue 27: a session whose policy commands are all wrong trains toward what the person
    did, exactly as without them; only the state shows what the policy sent."""
    schema = initial_schema()
    ticks = np.arange(0, 2000, 100, dtype=np.int64)
    person = [
        Command(50.0, "drive", {"speed": 0.6, "turn": 0.1}),
        Command(1450.0, "drive", {"speed": 0.4, "turn": -0.3}),  # a take-over
        Command(1850.0, "stop"),
    ]
    wrong = [  # the policy drove from 400 ms to 1450 ms, every command wrong
        Command(float(t), "drive", {"speed": -1.0, "turn": 1.0}, "policy")
        for t in range(400, 1450, 100)
    ]
    alone = label_windows(ticks, person, schema)
    mixed = label_windows(ticks, sorted(person + wrong, key=lambda c: c.t), schema)
    np.testing.assert_array_equal(mixed.fires, alone.fires)
    np.testing.assert_array_equal(mixed.values, alone.values)
    np.testing.assert_array_equal(mixed.available, alone.available)
    np.testing.assert_array_equal(mixed.category, alone.category)
    assert mixed.command_event_counts == alone.command_event_counts
    # The state shows what was sent: at 500 ms the policy's command of 400 ms.
    drive = STATE_FEATURES_PER_SLOT  # slot 1's features
    np.testing.assert_allclose(alone.states[5][drive : drive + 2], [0.6, 0.1], rtol=1e-6)
    assert mixed.states[5][drive : drive + 2].tolist() == [-1.0, 1.0]
    # Windows the policy drove and nobody corrected (400-1399 ms) hold no person's decision;
    # the take-over's window (1400-1499 ms) does.
    assert np.flatnonzero(mixed.autonomous).tolist() == list(range(4, 14))
    assert not alone.autonomous.any() and alone.take_overs == 0
    assert mixed.take_overs == 1
    assert summary(mixed).to_json()["autonomousWindows"] == 10
    assert "autonomousWindows" not in summary(alone).to_json()
