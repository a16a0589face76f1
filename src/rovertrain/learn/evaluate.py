"""The one forward pass over windows, used by the gate, periodic evaluation and the audits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from rovertrain.data.command_schema import SLOTS, VALUES, Schema
from rovertrain.data.dataset import WindowSet
from rovertrain.learn.batches import batch_tensors
from rovertrain.learn.losses import LossSetup, losses
from rovertrain.learn.metrics import EventMetrics, event_metrics
from rovertrain.learn.policy import Policy

BATCHES_PER_CHUNK = 4


def never() -> bool:
    return False


@dataclass
class Predictions:
    probabilities: np.ndarray  # [N, SLOTS] float32
    values: np.ndarray  # [N, SLOTS, VALUES] float32
    done: int  # windows predicted (a prefix, when stopped early)
    loss: float | None = None  # mean event + value loss, when a LossSetup was given


@dataclass(frozen=True)
class Scoring:
    """What turns predictions into metrics: the schema, the firing threshold, the baselines."""

    schema: Schema
    threshold: float
    frequencies: np.ndarray
    batch_size: int


def predict(
    model: Policy,
    windows: WindowSet,
    batch_size: int,
    should_stop: Callable[[], bool] = never,
    setup: LossSetup | None = None,
) -> Predictions:
    """Event probabilities and values for every window, and the loss if `setup` is given."""
    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    chunk = max(1, batch_size) * BATCHES_PER_CHUNK
    result = Predictions(
        np.zeros((len(windows), SLOTS), dtype=np.float32),
        np.zeros((len(windows), SLOTS, VALUES), dtype=np.float32),
        0,
    )
    total_loss = 0.0
    with torch.inference_mode():
        for start in range(0, len(windows), chunk):
            if should_stop():
                break
            window = slice(start, min(len(windows), start + chunk))
            batch = batch_tensors(windows, window)
            placed = batch.to(device)
            logits, predicted = model(placed.channels_last_images(), placed.states)
            logits, predicted = logits.cpu(), predicted.cpu()
            result.probabilities[window] = torch.sigmoid(logits.float()).numpy()
            result.values[window] = predicted.float().numpy()
            if setup is not None:
                event_loss, value_loss = losses(logits, predicted, batch, setup)
                total_loss += float(event_loss + value_loss) * len(batch.fires)
            result.done = window.stop
    model.train(was_training)
    if setup is not None:
        result.loss = total_loss / max(1, result.done)
    return result


def score(predictions: Predictions, windows: WindowSet, scoring: Scoring) -> EventMetrics:
    done = predictions.done
    return event_metrics(
        predictions.probabilities[:done] >= scoring.threshold,
        predictions.values[:done],
        windows.fires[:done].astype(bool),
        windows.values[:done],
        windows.available[:done].astype(bool),
        scoring.schema,
        scoring.frequencies,
    )


def evaluate(
    model: Policy, windows: WindowSet, scoring: Scoring, should_stop: Callable[[], bool] = never
) -> EventMetrics:
    return score(predict(model, windows, scoring.batch_size, should_stop), windows, scoring)


@dataclass(frozen=True)
class HeldOutCurve:
    """One point of the learning curve on unseen sessions (the `evaluation` event)."""

    metrics: EventMetrics
    loss: float

    def to_json(self) -> dict[str, float | int]:
        m = self.metrics
        return {
            "precision": m.precision,
            "recall": m.recall,
            "f1": m.f1,
            "stopRecall": m.stop_recall,
            "movementRecall": m.movement_recall,
            "numericMse": m.numeric_mse,
            "windows": m.windows,
            "heldOutLoss": self.loss,
        }


def held_out_curve(
    model: Policy, windows: WindowSet, scoring: Scoring, setup: LossSetup
) -> HeldOutCurve:
    predictions = predict(model, windows, scoring.batch_size, setup=setup)
    assert predictions.loss is not None
    return HeldOutCurve(score(predictions, windows, scoring), predictions.loss)
