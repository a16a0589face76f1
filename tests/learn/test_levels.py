"""Value levels (policy version 5): found in the recordings, classified, sent as a person sends."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from windows_fixture import learnable_windows

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.learn.batches import batch_tensors
from rovertrain.learn.levels import (
    FEWEST_SENDS,
    MOST_LEVELS,
    ValueLevels,
    column_levels,
    discover_levels,
    nearest_levels,
)
from rovertrain.learn.losses import level_loss, loss_setup, losses
from rovertrain.learn.policy import Policy, specification


def test_a_keyboard_column_has_its_levels_and_a_joystick_column_none() -> None:
    rng = np.random.default_rng(0)
    assert column_levels(rng.choice([-1.0, 0.0, 1.0], 300)) == [-1.0, 0.0, 1.0]
    assert column_levels(rng.uniform(-1, 1, 300)) is None  # a joystick: regressed
    assert column_levels(np.full(FEWEST_SENDS - 1, 0.6)) is None  # too few to say
    assert column_levels(np.full(FEWEST_SENDS, 0.6)) == [0.6]


def test_levels_need_few_distinct_values_covering_nearly_every_send() -> None:
    nine = np.repeat(np.linspace(-1, 1, MOST_LEVELS + 1), 40)
    assert column_levels(nine) is None
    eight = np.repeat(np.linspace(-1, 1, MOST_LEVELS), 100)
    assert column_levels(eight) == pytest.approx(list(np.linspace(-1, 1, MOST_LEVELS)), abs=1e-4)
    # One odd value in 800 (a hand-edited line) does not make the column continuous ...
    assert column_levels(np.append(eight, 0.123)) is not None
    # ... a slider used now and then (5% of the sends) does.
    assert column_levels(np.append(eight, np.linspace(-0.9, 0.9, 40))) is None


def test_float32_round_trips_are_one_level() -> None:
    sent = np.array([0.6] * 30 + [np.float32(0.6)] * 30 + [-0.6] * 30)
    assert column_levels(sent) == [-0.6, 0.6]


def _windows_with_turns(turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.zeros((len(turns), SLOTS, VALUES), dtype=np.float32)
    available = np.zeros((len(turns), SLOTS, VALUES), dtype=np.uint8)
    values[:, 1, 0] = 0.6
    values[:, 1, 1] = turns
    available[:, 1, :2] = 1
    return values, available


def test_discovery_covers_every_slot_and_column_and_targets_the_nearest_level() -> None:
    rng = np.random.default_rng(1)
    values, available = _windows_with_turns(rng.choice([-1.0, 0.0, 1.0], 200))
    levels = discover_levels(values, available)
    assert levels.levelled[1, :2].all() and levels.levelled.sum() == 2
    assert levels.of(1, 1) == [-1.0, 0.0, 1.0] and levels.of(1, 0) == [0.6]
    assert levels.to_json(initial_schema()) == {"drive": {"speed": [0.6], "turn": [-1.0, 0.0, 1.0]}}
    probe = np.zeros((3, SLOTS, VALUES), dtype=np.float32)
    probe[:, 1, 1] = [-0.8, 0.2, 0.7]
    # The loss's target is the nearest level: only a head sure of it has no loss.
    setup = loss_setup(learnable_windows(4), initial_schema())
    setup.level_values, setup.level_known = (
        torch.from_numpy(levels.values),
        torch.from_numpy(levels.known),
    )
    sure = torch.full((3, SLOTS, VALUES, MOST_LEVELS), -50.0)
    sure[[0, 1, 2], 1, 1, [0, 1, 2]] = 50.0
    assert level_loss(sure, torch.from_numpy(probe), setup)[:, 1, 1].max() < 1e-6
    # A column without sends (values unavailable) is regressed.
    assert not discover_levels(values, np.zeros_like(available)).levelled.any()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1, 1, width=32), min_size=FEWEST_SENDS, max_size=200))
def test_a_levelled_column_has_at_most_most_levels_sorted(sent: list[float]) -> None:
    levels = column_levels(np.array(sent))
    if levels is not None:
        assert len(levels) <= MOST_LEVELS and levels == sorted(levels)
        assert set(levels) <= {float(v) for v in np.round(np.array(sent, dtype=np.float64), 4)}


def test_a_value_whose_level_changes_on_a_tenth_of_its_sends_is_tapped_else_held() -> None:
    rng = np.random.default_rng(4)
    values, available = _windows_with_turns(rng.choice([-1.0, 0.0, 1.0], 300))
    values[:, 1, 2] = np.where(np.arange(300) < 290, 0.6, 0.0)  # a speed key, held
    available[:, 1, 2] = 1
    last = np.roll(values, 1, axis=0)  # each send against the one before it
    levels = discover_levels(values, available, last)
    assert levels.levelled[1, :3].all()
    assert levels.spread[1, 1] and not levels.spread[1, 2] and not levels.spread[1, 0]
    assert levels.spread_json(initial_schema()) == {"drive": ["turn"]}
    # without the sends before them, every levelled column is spread (the runtime's default)
    assert discover_levels(values, available).spread[1, :3].all()


def test_a_held_value_outputs_its_most_likely_level_a_tapped_one_its_expected_level() -> None:
    rng = np.random.default_rng(5)
    values, available = _windows_with_turns(rng.choice([-1.0, 0.0, 1.0], 100))
    levels = discover_levels(values, available)
    held = ValueLevels(levels.values, levels.known, np.zeros((SLOTS, VALUES), dtype=bool))
    policy = _levelled_policy(held).eval()
    batch = batch_tensors(learnable_windows(40, seed=3), slice(None))
    with torch.no_grad():
        _, output, _, level_logits = policy(batch.images, batch.states, auxiliary=True)
    likely = torch.tensor([-1.0, 0.0, 1.0])[level_logits[:, 1, 1, :3].argmax(dim=1)]
    assert torch.equal(output[:, 1, 1], likely)
    assert policy.value_levels().spread.sum() == 0  # travels with the weights
    spec = specification(initial_schema(), policy.value_levels())
    assert spec["output"]["values"]["spread"] == {}


def _levelled_policy(levels: ValueLevels) -> Policy:
    torch.manual_seed(0)
    policy = Policy()
    policy.use_levels(levels)
    return policy


def test_a_levelled_column_gives_its_expected_level() -> None:
    rng = np.random.default_rng(2)
    levels = discover_levels(*_windows_with_turns(rng.choice([-1.0, 0.0, 1.0], 100)))
    policy = _levelled_policy(levels).eval()
    windows = learnable_windows(40, seed=3)
    batch = batch_tensors(windows, slice(None))
    with torch.no_grad():
        _, values, _, level_logits = policy(batch.images, batch.states, auxiliary=True)
    assert torch.allclose(values[:, 1, 0], torch.tensor(0.6))  # one level: always it
    chances = torch.softmax(level_logits[:, 1, 1, :3], dim=1)
    expected = chances @ torch.tensor([-1.0, 0.0, 1.0])
    assert torch.allclose(values[:, 1, 1], expected, atol=1e-6)
    # evaluation scores the level a rover sends first: the nearest one
    first = nearest_levels(values.numpy(), levels)[:, 1, 1]
    assert set(first.tolist()) <= {-1.0, 0.0, 1.0}
    assert np.array_equal(
        first, np.array([-1.0, 0.0, 1.0])[np.abs(expected.numpy()[:, None] - [-1, 0, 1]).argmin(1)]
    )
    # Other columns are regressed as before: tanh values, not levels.
    assert len(set(values[:, 0, 0].tolist())) > 1
    # The levels travel with the weights (a checkpoint, a resume file).
    again = Policy()
    again.load_state_dict(policy.state_dict())
    assert np.array_equal(again.value_levels().known, levels.known)
    spec = specification(initial_schema(), again.value_levels())
    assert spec["output"]["values"]["levels"]["drive"]["turn"] == [-1.0, 0.0, 1.0]
    assert spec["output"]["values"]["levelOutput"] == "expected"
    assert "levels" not in specification(initial_schema())["output"]["values"]
    assert "levelOutput" not in specification(initial_schema())["output"]["values"]


def test_a_levelled_column_trains_the_level_head_not_the_regression() -> None:
    windows = learnable_windows(48, seed=5)
    setup = loss_setup(windows, initial_schema())
    assert setup.levels is not None and setup.levels.levelled[1, 0]  # speed 0.5: one level
    policy = _levelled_policy(setup.levels).train()
    batch = batch_tensors(windows, slice(None))
    logits, values, _, level_logits = policy(batch.images, batch.states, auxiliary=True)
    _, value_loss = losses(logits, values, batch, setup, level_logits)
    value_loss.backward()  # type: ignore[no-untyped-call]
    assert policy.levels.weight.grad is not None
    regression = policy.values.weight.grad
    assert regression is None or not regression.abs().sum() > 0


def _bimodal(count: int, seed: int) -> tuple[object, np.ndarray]:
    """Every window shows the same picture and state and sends drive with throttle 0.4 (7 in
    10) or -0.6: the mean, 0.1, is a value this person never sends."""
    windows = learnable_windows(count, seed=seed)
    rng = np.random.default_rng(seed)
    windows.frames[:] = windows.frames[0]
    windows.states[:] = windows.states[0]
    windows.fires[:] = 0
    windows.fires[:, 1] = 1
    windows.available[:] = 0
    windows.available[:, 1, 0] = 1
    windows.values[:] = 0
    windows.values[:, 1, 0] = np.where(rng.random(count) < 0.7, 0.4, -0.6)
    return windows, windows.values[:, 1, 0].copy()


@pytest.mark.parametrize("levelled", [True, False])
def test_levels_learn_the_persons_mixture_where_squared_error_learns_its_mean(
    levelled: bool,
) -> None:
    windows, _ = _bimodal(64, seed=7)
    setup = loss_setup(windows, initial_schema())  # type: ignore[arg-type]
    if not levelled:
        none = ValueLevels.none()
        setup.levels = none
        setup.level_values, setup.level_known = (
            torch.from_numpy(none.values),
            torch.from_numpy(none.known),
        )
    policy = _levelled_policy(setup.levels or ValueLevels.none()).train()
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    batch = batch_tensors(windows, slice(None))  # type: ignore[arg-type]
    for _ in range(60):
        optimizer.zero_grad()
        logits, values, _, level_logits = policy(batch.images, batch.states, auxiliary=True)
        _, value_loss = losses(logits, values, batch, setup, level_logits)
        value_loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    with torch.no_grad():
        _, output, _, level_logits = policy.eval()(batch.images, batch.states, auxiliary=True)
    sent = output[:, 1, 0]
    if levelled:
        # The pictures do not tell the keys apart: the gas on 70% of the sends, the brake on
        # 30%, which the level head learns (and the runtime sends, tests/runtime).
        chances = torch.softmax(level_logits[:, 1, 0, :2], dim=1)  # levels -0.6, 0.4
        assert abs(float(chances[:, 1].mean()) - 0.7) < 0.15
        assert torch.allclose(sent, chances @ torch.tensor([-0.6, 0.4]), atol=1e-6)
    else:
        assert abs(float(sent.mean()) - 0.1) < 0.15  # near the mean, sent by no one
        assert float((sent - 0.4).abs().min()) > 0.05
