"""Keeping the best weights by the selection signal while training runs."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from rovertrain.data.window_set import WindowSet
from rovertrain.learn.averaging import WeightAverage
from rovertrain.learn.evaluate import predict
from rovertrain.learn.losses import LossSetup
from rovertrain.learn.patience import Patience
from rovertrain.learn.policy import Policy

SIGNAL = "loss on the held-back tail of each training session (never the gate's sessions)"


@dataclass(frozen=True)
class SelectionSummary:
    """`diagnostics.selection`: what chose the published weights."""

    windows: int
    measurements: int
    best_step: int | None
    best_loss: float | None
    last_loss: float | None
    restored_best: bool
    average_decay: float = 0.0
    losses: tuple[tuple[int, float], ...] = ()  # (step, selection loss), every measurement

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": SIGNAL,
            "windows": self.windows,
            "measurements": self.measurements,
            "bestStep": self.best_step,
            "bestLoss": self.best_loss,
            "lastLoss": self.last_loss,
            "publishedBest": self.restored_best,
            "weightAverageDecay": self.average_decay,
            # The curve, so that a level before a fall (learn/patience.py) can be seen.
            "losses": [[step, round(loss, 6)] for step, loss in self.losses],
        }


class BestWeights:
    """Measures the selection loss every `every_steps` steps and keeps the best weights.

    With `average_decay` > 0 the weights measured, kept and published are the moving average
    of the trained ones (learn/averaging.py), updated after every step."""

    def __init__(
        self,
        model: Policy,
        windows: WindowSet,
        setup: LossSetup,
        batch_size: int,
        every_steps: int,
        patience: int,
        average_decay: float = 0.0,
    ):
        self.model, self.windows, self.setup = model, windows, setup
        self.average = WeightAverage(model, average_decay) if average_decay > 0 else None
        self.measured: Policy = self.average.model if self.average is not None else model
        self.batch_size, self.every_steps = batch_size, every_steps
        self.rule = Patience(patience if len(windows) else 0)
        self.best: dict[str, torch.Tensor] | None = None
        self.measured_at: int | None = None
        self.losses: list[tuple[int, float]] = []

    def measure(self, step: int) -> None:
        if not len(self.windows) or step == self.measured_at:
            return
        self.measured_at = step
        loss = predict(self.measured, self.windows, self.batch_size, setup=self.setup).loss
        assert loss is not None
        self.losses.append((step, loss))
        if self.rule.observe(step, loss):
            self.best = copy.deepcopy(self.measured.state_dict())

    def on_step(self, step: int) -> None:
        if self.average is not None:
            self.average.update()
        if step % self.every_steps == 0:
            self.measure(step)

    def converged(self) -> bool:
        return self.rule.converged()

    def finish(self, step: int) -> SelectionSummary:
        """Measure the last weights too, then put the best into the model."""
        self.measure(step)
        restored = self.best is not None and self.rule.best_step != step
        if self.best is not None:
            self.model.load_state_dict(self.best)
        elif self.average is not None:
            self.model.load_state_dict(self.average.model.state_dict())
        rule = self.rule
        return SelectionSummary(
            windows=len(self.windows),
            measurements=rule.measurements,
            best_step=rule.best_step if self.best is not None else None,
            best_loss=rule.best_loss if self.best is not None else None,
            last_loss=rule.last_loss,
            restored_best=restored,
            average_decay=self.average.decay if self.average is not None else 0.0,
            losses=tuple(self.losses),
        )
