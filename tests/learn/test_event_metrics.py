"""Event metrics and the baselines they are compared with: pure numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.learn.metrics import (
    VALUE_AGREEMENT,
    command_changes,
    event_metrics,
    frequency_baselines,
    motion_type_changes,
    natural_frequencies,
    scored_slots,
    timely_precision,
    value_agreement,
)
from rovertrain.runtime.state import encode_states, last_values_of, recency_of


def test_baseline_f1() -> None:
    actual = np.zeros((10, 2), dtype=bool)
    actual[:2, 1] = True  # 2 of 20 window-slots fire
    rows = {row.rule: row.score for row in frequency_baselines(actual, np.array([0.0, 0.2]))}
    # always: fire slot 1 everywhere: precision 2/10, recall 1
    assert rows["always"].precision == pytest.approx(0.2)
    assert rows["always"].f1 == pytest.approx(2 * 0.2 / 1.2)
    assert rows["frequency"].recall == pytest.approx(0.2)


def following(actual: np.ndarray) -> np.ndarray:
    """The person's commands in the window after each, for consecutive windows."""
    after = np.zeros_like(actual)
    after[:-1] = actual[1:]
    return after


def test_a_fire_one_tick_before_the_persons_command_counts_on_time_late_does_not() -> None:
    """Scored with the person's history, a policy that sees a stop coming fires a window
    early and again in the person's window; on a rover the early one is the only one sent."""
    schema = [*initial_schema(), {"type": "horn", "values": [], "role": "other"}]
    actual = np.zeros((8, SLOTS), dtype=bool)
    actual[2, 0] = actual[6, 1] = actual[4, 2] = True
    predicted = np.zeros_like(actual)
    predicted[1, 0] = predicted[2, 0] = True  # the stop early, then on time
    predicted[6, 1] = predicted[7, 1] = True  # the drive on time, then late
    predicted[3, 2] = True  # the horn early: a signal is not in the overall figures
    predicted[3, 1] = True  # a drive one window before the person's horn: another type
    values = np.zeros((8, SLOTS, VALUES), dtype=np.float32)
    available = np.zeros((8, SLOTS, VALUES), dtype=bool)
    m = event_metrics(
        predicted, values, actual, values, available, schema, np.zeros(SLOTS), following(actual)
    )
    assert m.precision == pytest.approx(2 / 5)
    assert m.timely_precision == pytest.approx(3 / 5)
    assert m.to_json()["timelyPrecision"] == m.timely_precision
    assert timely_precision(predicted[:0], actual[:0], actual[:0]) == 0.0  # nothing fired


def test_event_metrics_counts() -> None:
    schema = initial_schema()
    actual = np.zeros((4, 8), dtype=bool)
    actual[0, 0] = actual[1, 1] = actual[2, 1] = True
    predicted = np.zeros_like(actual)
    predicted[0, 0] = predicted[1, 1] = predicted[3, 1] = True
    values = np.zeros((4, 8, 4), dtype=np.float32)
    targets = values.copy()
    targets[1, 1, 0] = 0.5
    available = np.zeros((4, 8, 4), dtype=bool)
    available[1, 1, 0] = True
    m = event_metrics(
        predicted, values, actual, targets, available, schema, np.zeros(8), following(actual)
    )
    assert m.precision == pytest.approx(2 / 3) and m.recall == pytest.approx(2 / 3)
    assert m.timely_precision == pytest.approx(2 / 3)  # the stray drive has nothing after it
    assert m.stop_recall == 1.0 and m.movement_recall == 0.5
    assert m.numeric_mse == pytest.approx(0.25)
    document = m.to_json()
    assert document["precision"] == m.precision and document["stopRecall"] == 1.0
    assert [slot["type"] for slot in document["perSlot"]] == ["stop", "drive"]
    assert [row["rule"] for row in document["baselines"]["trainingFrequency"]] == [
        "always",
        "frequency",
    ]


def test_a_signal_is_scored_per_type_only() -> None:
    """A horn (role other) predicted in every window until the person sounds it: its own row
    says so; the overall figures and the baselines count the stop and the drive alone."""
    schema = [*initial_schema(), {"type": "horn", "values": [], "role": "other"}]
    actual = np.zeros((6, SLOTS), dtype=bool)
    actual[0, 0] = actual[1, 1] = actual[5, 2] = True
    predicted = np.zeros_like(actual)
    predicted[0, 0] = predicted[1, 1] = predicted[2, 1] = True
    predicted[:, 2] = True  # the horn in all six windows, one of them right
    values = np.zeros((6, SLOTS, VALUES), dtype=np.float32)
    available = np.zeros((6, SLOTS, VALUES), dtype=bool)
    frequencies = np.zeros(SLOTS)
    frequencies[:3] = [0.1, 0.4, 0.2]
    m = event_metrics(
        predicted, values, actual, values, available, schema, frequencies, following(actual)
    )
    assert (m.positive_actions, m.predicted_actions) == (2, 3)
    assert m.precision == pytest.approx(2 / 3) and m.recall == 1.0
    horn = m.per_slot[2]
    assert (horn.events, horn.predicted, horn.score.precision) == (1, 6, pytest.approx(1 / 6))
    always = {row.rule: row.score for row in m.baselines}["always"]
    assert always.precision == pytest.approx(2 / 12)  # stop and drive in every window
    assert scored_slots(schema).tolist() == [True, True, False]


def test_natural_frequencies_per_usable_window() -> None:
    frequencies = natural_frequencies(200, np.array([10, 50, 0]))
    assert frequencies.tolist() == [0.05, 0.25, 0.0]
    assert natural_frequencies(0, np.array([0])).tolist() == [0.0]
    # More windows than there are is a count of commands, not of windows.
    with pytest.raises(ValueError, match=r"outside 0\.\.200"):
        natural_frequencies(200, np.array([10, 201]))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2),
    st.integers(0, 2**16),
)
def test_the_baselines_are_scores_whatever_the_frequencies(
    windows: int, frequencies: list[float], seed: int
) -> None:
    actual = np.random.default_rng(seed).random((windows, 2)) < 0.6
    for row in frequency_baselines(actual, np.array(frequencies)):
        assert 0.0 <= row.score.precision <= 1.0 and 0.0 <= row.score.recall <= 1.0, row


def test_the_baselines_refuse_a_rate_that_is_no_probability() -> None:
    with pytest.raises(ValueError, match="not probabilities per window"):
        frequency_baselines(np.ones((4, 1), dtype=bool), np.array([1.06]))


def _history(elapsed: list[list[float]], last: list[list[float]]) -> np.ndarray:
    """State vectors built by the one encoder, from elapsed ms per slot and each slot's last
    first value (slot 0 stop, slot 1 drive)."""
    count = len(elapsed)
    times = np.full((count, SLOTS), np.inf)
    times[:, :2] = elapsed
    values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
    values[:, :2, 0] = last
    return encode_states(times, values)


def test_changes_and_resends_from_the_state_vector() -> None:
    inf = float("inf")
    states = _history(
        elapsed=[
            [inf, 500.0],  # drive re-sent with the same value: a re-send
            [inf, 500.0],  # drive with a new value: a change
            [200.0, 900.0],  # drive right after a stop: a type change
            [inf, inf],  # the first drive ever: a change
            [300.0, 300.0],  # a stop re-sent (both sent at the same moment): a re-send
        ],
        last=[[0.0, 0.6], [0.0, 0.6], [0.0, 0.6], [0.0, 0.0], [0.0, 0.6]],
    )
    actual = np.zeros((5, SLOTS), dtype=bool)
    actual[[0, 1, 2, 3], 1] = True
    actual[4, 0] = True
    targets = np.zeros((5, SLOTS, VALUES), dtype=np.float32)
    targets[:, 1, 0] = [0.62, 0.9, 0.6, 0.6, 0.0]
    available = np.zeros((5, SLOTS, VALUES), dtype=bool)
    available[:4, 1, 0] = True
    changes = command_changes(
        actual, targets, available, last_values_of(states), recency_of(states)
    )
    assert changes[:, 1].tolist() == [False, True, True, True, False]
    assert not changes[:, 0].any()


def test_hold_last_baseline_and_the_split_in_event_metrics() -> None:
    schema = initial_schema()
    inf = float("inf")
    states = _history(elapsed=[[inf, 500.0], [inf, 500.0]], last=[[0.0, 0.5], [0.0, 0.5]])
    actual = np.zeros((2, SLOTS), dtype=bool)
    actual[:, 1] = True
    targets = np.zeros((2, SLOTS, VALUES), dtype=np.float32)
    targets[:, 1, 0] = [0.5, 0.9]  # a re-send, then a change of 0.4
    available = np.zeros((2, SLOTS, VALUES), dtype=bool)
    available[:, 1, 0] = True
    predicted = np.zeros_like(actual)
    predicted[1, 1] = True  # only the change is predicted
    predicted_values = targets.copy()
    predicted_values[1, 1, 0] = 0.7  # 0.2 off on the change
    history = (last_values_of(states), recency_of(states))
    m = event_metrics(
        predicted,
        predicted_values,
        actual,
        targets,
        available,
        schema,
        np.zeros(8),
        following(actual),
        history,
    )
    assert m.hold_last is not None
    assert m.hold_last.numeric_mse == pytest.approx(0.4**2 / 2)
    assert m.numeric_mse == pytest.approx(0.2**2 / 2)
    assert m.value_error_vs_hold_last() == pytest.approx(0.25)
    assert (m.hold_last.changes.events, m.hold_last.changes.recall) == (1, 1.0)
    assert (m.hold_last.resends.events, m.hold_last.resends.recall) == (1, 0.0)
    assert m.hold_last.changes.numeric_mse == pytest.approx(0.04)
    assert m.hold_last.resends.hold_last_mse == pytest.approx(0.0)
    document = m.to_json()
    assert document["changes"]["events"] == 1 and document["valueErrorVsHoldLast"] == 0.25


def test_motion_type_changes_ignore_other_role_commands() -> None:
    inf = np.inf
    # slots: stop (motion), drive (motion), horn (other); recency: seconds-ago fraction
    recency = np.array(
        [
            [0.02, 0.30, inf],  # stop sent last, drive now: a restart
            [0.30, 0.05, inf],  # drive sent last, drive now: a keepalive
            [0.50, 0.20, 0.01],  # horn sent last, then drive: no switch of what the rover does
            [inf, inf, inf],  # nothing ever sent: the first drive is a switch
            [0.30, 0.05, 0.50],  # the horn itself fires: never counted
        ]
    )
    actual = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=bool)
    motion = np.array([True, True, False])
    changes = motion_type_changes(actual, recency, motion)
    assert changes.tolist() == [
        [False, True, False],
        [False, False, False],
        [False, False, False],
        [False, True, False],
        [False, False, False],
    ]


def test_a_blend_between_two_levels_disagrees_where_its_squared_error_looks_small() -> None:
    """A person taps a full turn (1.0) or none (0.0); a value head that learned the blend
    (0.5) has a squared error of 0.25 on each, and agrees with none of them."""
    events = np.ones((4, 1), dtype=bool)
    available = np.zeros((4, 1, 2), dtype=bool)
    available[:, :, 0] = True  # one value: the turn
    person = np.zeros((4, 1, 2), dtype=np.float32)
    person[:2, 0, 0] = 1.0
    blend = np.full_like(person, 0.5)
    assert value_agreement(blend, person, available, events) == 0.0
    levels = person.copy()
    levels[0, 0, 0] = 0.0  # one wrong level, three right
    assert value_agreement(levels, person, available, events) == 0.75
    near = person + VALUE_AGREEMENT * 0.9
    near[:, 0, 1] = 9.0  # a value the person's command does not carry is not compared
    assert value_agreement(near, person, available, events) == 1.0
    assert value_agreement(blend, person, available, np.zeros_like(events)) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_overall_value_agreement_is_the_share_over_the_scored_events(seed: int) -> None:
    rng = np.random.default_rng(seed)
    schema = initial_schema()
    actual = rng.random((40, SLOTS)) < 0.3
    available = np.zeros((40, SLOTS, VALUES), dtype=bool)
    available[:, 1, :2] = True  # drive carries speed and turn
    targets = rng.choice([0.0, 0.5, 1.0], size=(40, SLOTS, VALUES)).astype(np.float32)
    predicted = targets + rng.choice([0.0, 0.3], size=targets.shape).astype(np.float32)
    metrics = event_metrics(
        actual, predicted, actual, targets, available, schema, np.zeros(SLOTS), following(actual)
    )
    drive = actual[:, 1]
    if not drive.any():
        assert metrics.value_agreement is None
        return
    close = (np.abs(predicted - targets)[:, 1, :2] <= VALUE_AGREEMENT).all(axis=1)
    assert metrics.value_agreement == pytest.approx(close[drive].mean())
    assert metrics.per_slot[1].value_agreement == pytest.approx(close[drive].mean())
    assert metrics.per_slot[0].value_agreement is None  # stop carries no value
