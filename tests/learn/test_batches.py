"""Batches: the change marks the value loss weighs, and the train-only input corruptions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.contracts.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data.window_set import WindowSet
from rovertrain.learn.batches import batch_tensors, drop_value_history
from rovertrain.learn.losses import loss_setup, losses, selection_setup


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
        fires_next=np.zeros_like(fires),
        values=values,
        available=available,
        category=np.ones(count, dtype=np.int8),
        session=np.zeros(count, dtype=np.int32),
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


def _restart_windows() -> WindowSet:
    """`_one_slot_windows`, where in the last window slot 1 (a stop) was sent after the drive."""
    windows = _one_slot_windows()
    states = windows.states.reshape(4, SLOTS, STATE_FEATURES_PER_SLOT).copy()
    states[3, 1, 4] = 0.0  # sent ...
    states[3, 1, 6] = 0.01  # ... 100 ms ago, after the last drive
    return WindowSet(
        frames=windows.frames,
        states=states.reshape(4, -1),
        fires=windows.fires,
        fires_next=windows.fires_next,
        values=windows.values,
        available=windows.available,
        category=windows.category,
        session=windows.session,
    )


def test_a_batch_marks_the_events_that_switch_between_stop_and_movement() -> None:
    batch = batch_tensors(_restart_windows(), slice(None))
    assert batch.changes[:, 0].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert batch.type_changes[:, 0].tolist() == [0.0, 0.0, 0.0, 1.0]  # window 2: values only
    assert float(batch.type_changes[:, 1:].sum()) == 0.0
    # A slot outside the motion roles (a horn) sent last is no switch; nor are its own events.
    motion = np.ones(SLOTS, dtype=bool)
    motion[1] = False
    assert batch_tensors(_restart_windows(), slice(None), motion).type_changes.sum() == 0.0


def test_type_change_event_weight_scales_the_restarts_in_the_event_loss() -> None:
    windows = _restart_windows()
    batch = batch_tensors(windows, slice(None))
    schema = initial_schema()
    logits = torch.zeros(4, SLOTS)
    logits[:, 0] = torch.tensor([1.0, -1.0, 2.0, -2.0])  # a different BCE in every window
    setup = loss_setup(windows, schema)
    no_values = torch.zeros(4, SLOTS, VALUES)
    plain, _ = losses(logits, no_values, batch, setup)
    weighted, _ = losses(logits, no_values, batch, loss_setup(windows, schema, 1.0, 3.0))
    per_slot = torch.nn.functional.binary_cross_entropy_with_logits(
        logits, batch.fires, pos_weight=setup.positive_weight, reduction="none"
    )
    per_slot = per_slot * setup.slot_mask
    scale = setup.slot_mask.sum() * 4
    assert float(plain) == pytest.approx(float(per_slot.sum() / scale))
    restart = per_slot[3, 0]  # only window 3 sends a type change
    assert float(weighted) == pytest.approx(float((per_slot.sum() + 2 * restart) / scale))
    # The selection signal weighs every window alike; the value weighting stays.
    chosen = selection_setup(loss_setup(windows, schema, 0.0, 3.0))
    assert chosen.type_change_event_weight == 1.0 and chosen.resend_value_weight == 0.0
    selected, _ = losses(logits, no_values, batch, chosen)
    assert float(selected) == pytest.approx(float(plain))


def test_a_window_carries_its_previous_ticks_frame_into_the_batch() -> None:
    from rovertrain.data.window_set import WindowSetBuilder, window_chunk
    from rovertrain.data.windows import label_windows

    ticks = np.arange(6, dtype=np.int64) * 100
    frames = np.stack(
        [np.full((OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS), 10 * k, np.uint8) for k in range(6)]
    )
    builder = WindowSetBuilder(3)
    builder.add(window_chunk(frames, label_windows(ticks, [], initial_schema()), [0, 3, 4]))
    windows = builder.build()
    images = batch_tensors(windows, slice(None)).images
    assert images.shape == (3, 2 * OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH)
    # This tick's frame, then the previous tick's (the first window's is its own).
    assert images[:, 0, 0, 0].tolist() == [0, 30, 40]
    assert images[:, OBS_CHANNELS, 0, 0].tolist() == [0, 20, 30]
    picked = windows.subset(np.array([2]))
    assert int(picked.frames[0, 0, 0, 0]) == 40 and int(picked.frames[0, 0, 0, OBS_CHANNELS]) == 30


def test_augmenting_the_history_leaves_this_ticks_picture_as_one_picture_alone() -> None:
    # The event head reads this tick's picture only: it must train on exactly the pictures
    # the one-picture policy did, whatever the previous picture holds.
    from rovertrain.contracts.observation import OBS_CHANNELS
    from rovertrain.learn.batches import augment

    images = torch.randint(0, 256, (6, 2 * OBS_CHANNELS, 12, 16), dtype=torch.uint8)
    other = images.clone()
    other[:, OBS_CHANNELS:] = 255 - images[:, OBS_CHANNELS:]
    alone = images[:, :OBS_CHANNELS].contiguous()
    results = [
        augment(pictures, torch.Generator().manual_seed(5), colour=0.2, shift=2)
        for pictures in (images, other, alone)
    ]
    for stacked in results[:2]:
        assert torch.allclose(stacked[:, :OBS_CHANNELS], results[2], atol=1e-6)
    assert not torch.allclose(results[0][:, OBS_CHANNELS:], results[1][:, OBS_CHANNELS:])
