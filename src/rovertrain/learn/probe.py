"""The learning probe: can a copy of the model still fit a small subset?"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from rovertrain.data.window_set import WindowSet
from rovertrain.learn.batches import batch_tensors
from rovertrain.learn.losses import LossSetup, losses
from rovertrain.learn.policy import Policy

PROBE_WINDOWS = 96
PROBE_STEPS = 200


@dataclass(frozen=True)
class ProbeResult:
    steps: int
    windows: int
    initial_loss: float | None
    final_loss: float | None
    seconds: float

    @property
    def learns(self) -> bool:
        first, last = self.initial_loss, self.final_loss
        return first is not None and last is not None and last < first * 0.8

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "windows": self.windows,
            "initialLoss": self.initial_loss,
            "finalLoss": self.final_loss,
            "seconds": self.seconds,
            "learns": self.learns,
        }


def probe(
    model: Policy,
    windows: WindowSet,
    setup: LossSetup,
    should_stop: Callable[[], bool],
    max_seconds: float,
    learning_rate: float,
) -> ProbeResult:
    """Overfit a copy on up to 96 windows for at most `max_seconds`.

    A policy that cannot drive its own training loss down has a broken input or loss, whatever
    the held-out figures say.
    """
    started = time.monotonic()
    clone = copy.deepcopy(model)
    clone.train()
    optimizer = torch.optim.AdamW(clone.parameters(), lr=learning_rate)
    batch = batch_tensors(windows, slice(0, min(PROBE_WINDOWS, len(windows))))
    images = batch.channels_last_images()
    first: float | None = None
    last: float | None = None
    steps = 0
    while time.monotonic() - started < max_seconds and steps < PROBE_STEPS and not should_stop():
        optimizer.zero_grad(set_to_none=True)
        logits, predictions = clone(images, batch.states)
        event_loss, value_loss = losses(logits, predictions, batch, setup)
        loss = event_loss + value_loss
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        last = float(loss.item())
        first = last if first is None else first
        steps += 1
    seconds = round(time.monotonic() - started, 3)
    return ProbeResult(steps, len(batch.fires), first, last, seconds)
