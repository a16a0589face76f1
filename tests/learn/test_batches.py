"""Batches: the change marks the value loss weighs, and the train-only input corruptions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rovertrain.data.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.data.dataset import WindowSet
from rovertrain.data.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH, STATE_FEATURES_PER_SLOT
from rovertrain.learn.batches import batch_tensors, drop_value_history
from rovertrain.learn.losses import loss_setup, losses


def test_value_history_dropout_hides_only_the_last_values() -> None:
    states = torch.rand(400, SLOTS * STATE_FEATURES_PER_SLOT) + 0.1
    original = states.clone()
    generator = torch.Generator().manual_seed(0)
    assert drop_value_history(states, 0.0, generator) is states
    dropped = drop_value_history(states, 0.5, generator).view(400, SLOTS, -1)
    assert torch.equal(states, original)  # the batch itself is not modified
    hidden = (dropped[:, :, :VALUES] == 0).all(dim=2).all(dim=1)
    assert 120 < int(hidden.sum()) < 280  # about half the examples
    assert (dropped[~hidden, :, :VALUES] > 0).all()
    assert torch.equal(dropped[:, :, VALUES:], original.view(400, SLOTS, -1)[:, :, VALUES:])
    everything = drop_value_history(states, 1.0, generator).view(
        400, SLOTS, STATE_FEATURES_PER_SLOT
    )
    assert (everything[:, :, :VALUES] == 0).all()


def _one_slot_windows() -> WindowSet:
    """Four `drive` events (slot 0): two re-send the last values, two change them."""
    count = 4
    states = np.zeros((count, SLOTS, STATE_FEATURES_PER_SLOT), dtype=np.float32)
    states[:, 1:, 4] = 1.0  # every other slot never sent
    states[:, 0, 0] = 0.5  # drive was last sent with value 0.5 ...
    states[:, 0, 6] = 0.05  # ... half a second ago
    values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
    values[:, 0, 0] = [0.5, 0.5, 0.9, 0.1]  # re-send, re-send, change, change
    available = np.zeros((count, SLOTS, VALUES), dtype=np.uint8)
    available[:, 0, 0] = 1
    fires = np.zeros((count, SLOTS), dtype=np.uint8)
    fires[:, 0] = 1
    return WindowSet(
        frames=np.zeros((count, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS), dtype=np.uint8),
        states=states.reshape(count, -1),
        fires=fires,
        values=values,
        available=available,
        category=np.ones(count, dtype=np.int8),
    )


def test_a_batch_marks_the_events_that_change_what_the_rover_does() -> None:
    batch = batch_tensors(_one_slot_windows(), slice(None))
    assert batch.changes[:, 0].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert float(batch.changes[:, 1:].sum()) == 0.0  # nothing fired there


def test_resend_value_weight_scales_the_resends_in_the_value_loss() -> None:
    windows = _one_slot_windows()
    batch = batch_tensors(windows, slice(None))
    logits = torch.zeros(4, SLOTS)
    predicted = torch.zeros(4, SLOTS, VALUES)  # errors: 0.25, 0.25, 0.81, 0.01
    schema = initial_schema()
    _, every_event = losses(logits, predicted, batch, loss_setup(windows, schema, 1.0))
    _, changes_only = losses(logits, predicted, batch, loss_setup(windows, schema, 0.0))
    _, tenth = losses(logits, predicted, batch, loss_setup(windows, schema, 0.1))
    assert float(every_event) == pytest.approx((0.25 + 0.25 + 0.81 + 0.01) / 4)
    assert float(changes_only) == pytest.approx((0.81 + 0.01) / 2)
    assert float(tenth) == pytest.approx((0.1 * 0.5 + 0.82) / 2.2)
