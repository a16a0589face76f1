"""Loss set-up, batches, losses and held-out evaluation of the policy."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from rovertrain.data.command_schema import SLOTS, VALUES, Schema
from rovertrain.data.dataset import WindowSet
from rovertrain.learn.metrics import event_metrics
from rovertrain.learn.policy import Policy


@dataclass
class LossSetup:
    numeric_mask: torch.Tensor  # [SLOTS, VALUES] float: value columns that carry numbers
    positive_weight: torch.Tensor  # [SLOTS] BCE positive weights
    slot_mask: torch.Tensor  # [SLOTS] float: slots the schema defines


def loss_setup(pool: WindowSet, schema: Schema) -> LossSetup:
    slot_mask = torch.zeros(SLOTS)
    slot_mask[: len(schema)] = 1.0
    numeric = torch.from_numpy((pool.available.sum(axis=0) > 0).astype(np.float32))
    numeric = numeric * slot_mask[:, None]
    fires = pool.fires.astype(np.float64)
    positives = fires.sum(axis=0)
    negatives = len(pool) - positives
    weight = np.where(positives > 0, negatives / np.maximum(positives, 1), 1.0)
    weight = np.clip(weight, 1.0, 20.0)
    return LossSetup(numeric, torch.from_numpy(weight.astype(np.float32)), slot_mask)


@dataclass
class Batch:
    images: torch.Tensor
    states: torch.Tensor
    fires: torch.Tensor
    values: torch.Tensor
    available: torch.Tensor


def batch_tensors(windows: WindowSet, indices: np.ndarray | slice) -> Batch:
    # NHWC uint8 permuted to an NCHW view: that is exactly the channels_last layout.
    images = torch.from_numpy(np.ascontiguousarray(windows.frames[indices])).permute(0, 3, 1, 2)
    return Batch(
        images,
        torch.from_numpy(np.ascontiguousarray(windows.states[indices])),
        torch.from_numpy(windows.fires[indices].astype(np.float32)),
        torch.from_numpy(np.ascontiguousarray(windows.values[indices])),
        torch.from_numpy(windows.available[indices].astype(np.float32)),
    )


def losses(
    logits: torch.Tensor, predictions: torch.Tensor, batch: Batch, setup: LossSetup
) -> tuple[torch.Tensor, torch.Tensor]:
    """(event loss, command-value loss), both in float32."""
    logits = logits.float()
    predictions = predictions.float()
    per_slot = F.binary_cross_entropy_with_logits(
        logits, batch.fires, pos_weight=setup.positive_weight, reduction="none"
    )
    event_loss = (per_slot * setup.slot_mask).sum() / (setup.slot_mask.sum() * len(batch.fires))
    mask = batch.available * setup.numeric_mask
    count = mask.sum()
    if count > 0:
        value_loss = (((predictions - batch.values) ** 2) * mask).sum() / count
    else:
        value_loss = predictions.sum() * 0.0
    return event_loss, value_loss


def augment(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Train-only photometric augmentation: random brightness and contrast per image."""
    count = images.shape[0]
    floats = images.float() * (1.0 / 255.0)
    brightness = (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.3
    contrast = 1.0 + (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.4
    mean = floats.mean(dim=(1, 2, 3), keepdim=True)
    return ((floats - mean) * contrast + mean + brightness).clamp_(0.0, 1.0)


def predict(
    model: Policy,
    windows: WindowSet,
    batch_size: int,
    should_stop: Callable[[], bool] = lambda: False,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Event probabilities and values for every window (or a prefix, when stopped)."""
    was_training = model.training
    model.eval()
    probabilities = np.zeros((len(windows), SLOTS), dtype=np.float32)
    values = np.zeros((len(windows), SLOTS, VALUES), dtype=np.float32)
    done = 0
    with torch.inference_mode():
        for start in range(0, len(windows), max(1, batch_size) * 4):
            if should_stop():
                break
            window = slice(start, min(len(windows), start + max(1, batch_size) * 4))
            batch = batch_tensors(windows, window)
            logits, predicted = model(
                batch.images.contiguous(memory_format=torch.channels_last), batch.states
            )
            probabilities[window] = torch.sigmoid(logits.float()).numpy()
            values[window] = predicted.float().numpy()
            done = window.stop
    model.train(was_training)
    return probabilities, values, done


def evaluate(
    model: Policy,
    windows: WindowSet,
    schema: Schema,
    threshold: float,
    frequencies: np.ndarray,
    batch_size: int,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    probabilities, values, done = predict(model, windows, batch_size, should_stop)
    return event_metrics(
        probabilities[:done] >= threshold,
        values[:done],
        windows.fires[:done].astype(bool),
        windows.values[:done],
        windows.available[:done].astype(bool),
        schema,
        frequencies,
    )


def probe(
    model: Policy,
    windows: WindowSet,
    setup: LossSetup,
    should_stop: Callable[[], bool],
    max_seconds: float,
    learning_rate: float,
) -> dict[str, Any]:
    """Can a copy of the model still fit a small subset? (The seed's learning probe.)

    Overfits a copy on up to 96 windows for at most `max_seconds`; a policy that cannot drive
    its own training loss down has a broken input or loss, whatever the held-out figures say.
    """
    import copy

    started = time.monotonic()
    clone = copy.deepcopy(model)
    clone.train()
    optimizer = torch.optim.AdamW(clone.parameters(), lr=learning_rate)
    batch = batch_tensors(windows, slice(0, min(96, len(windows))))
    images = batch.images.contiguous(memory_format=torch.channels_last)
    first = last = None
    steps = 0
    while time.monotonic() - started < max_seconds and steps < 200 and not should_stop():
        optimizer.zero_grad(set_to_none=True)
        logits, predictions = clone(images, batch.states)
        event_loss, value_loss = losses(logits, predictions, batch, setup)
        loss = event_loss + value_loss
        loss.backward()
        optimizer.step()
        last = float(loss.item())
        first = last if first is None else first
        steps += 1
    return {
        "steps": steps,
        "windows": len(batch.fires),
        "initialLoss": first,
        "finalLoss": last,
        "seconds": round(time.monotonic() - started, 3),
        "learns": bool(first is not None and last is not None and last < first * 0.8),
    }
