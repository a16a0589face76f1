"""The one forward pass over windows, used by the gate, periodic evaluation and the audits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema
from rovertrain.contracts.observation import BLIND_GREY
from rovertrain.data.window_set import WindowSet
from rovertrain.learn.batches import batch_tensors
from rovertrain.learn.levels import nearest_levels
from rovertrain.learn.losses import LossSetup, losses
from rovertrain.learn.metrics import EventMetrics, event_metrics
from rovertrain.learn.policy import Policy
from rovertrain.runtime.state import last_values_of, recency_of

BATCHES_PER_CHUNK = 4


def never() -> bool:
    return False


@dataclass
class Predictions:
    probabilities: np.ndarray  # [N, SLOTS] float32
    values: np.ndarray  # [N, SLOTS, VALUES] float32
    done: int  # windows predicted (a prefix, when stopped early)
    loss: float | None = None  # mean event + value loss, when a LossSetup was given
    levelled: np.ndarray | None = None  # bool [SLOTS, VALUES]: columns sent as levels


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
    blind: bool = False,
) -> Predictions:
    """Event probabilities and values for every window, and the loss if `setup` is given.

    `blind`: every frame replaced by the constant BLIND_GREY picture (the camera baseline)."""
    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    chunk = max(1, batch_size) * BATCHES_PER_CHUNK
    result = Predictions(
        np.zeros((len(windows), SLOTS), dtype=np.float32),
        np.zeros((len(windows), SLOTS, VALUES), dtype=np.float32),
        0,
    )
    levels = model.value_levels()
    result.levelled = levels.levelled
    total_loss = 0.0
    with torch.inference_mode():
        for start in range(0, len(windows), chunk):
            if should_stop():
                break
            window = slice(start, min(len(windows), start + chunk))
            batch = batch_tensors(windows, window, setup.motion_slots if setup else None)
            placed = batch.to(device)
            images = placed.channels_last_images()
            if blind:
                images = torch.full_like(images, BLIND_GREY)
            logits, predicted, shared, _ = model(images, placed.states, auxiliary=True)
            logits, predicted, shared = logits.cpu(), predicted.cpu(), shared.cpu()
            result.probabilities[window] = torch.sigmoid(logits.float()).numpy()
            result.values[window] = predicted.float().numpy()
            if setup is not None:
                # The selection signal is the one-head policy's: the events and the event
                # trunk's values (docs/learning.md); the value head's are scored, not selected on.
                event_loss, value_loss = losses(logits, shared, batch, setup)
                total_loss += float(event_loss + value_loss) * len(batch.fires)
            result.done = window.stop
    model.train(was_training)
    if result.levelled.any():  # an expected level is scored as the level a rover sends first
        result.values = nearest_levels(result.values, levels)
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
        windows.fires_next[:done].astype(bool),
        (last_values_of(windows.states[:done]), recency_of(windows.states[:done])),
        predictions.levelled,
    )


def evaluate(
    model: Policy,
    windows: WindowSet,
    scoring: Scoring,
    should_stop: Callable[[], bool] = never,
    blind: bool = False,
) -> EventMetrics:
    predictions = predict(model, windows, scoring.batch_size, should_stop, blind=blind)
    return score(predictions, windows, scoring)


def headline(m: EventMetrics) -> dict[str, float]:
    """The figures every evaluation summary starts with."""
    return {
        "precision": m.precision,
        "timelyPrecision": m.timely_precision,
        "recall": m.recall,
        "f1": m.f1,
        "stopRecall": m.stop_recall,
        "movementRecall": m.movement_recall,
        "numericMse": m.numeric_mse,
    }


@dataclass(frozen=True)
class BlindScore:
    """The same weights with a constant grey camera: what the state vector alone achieves."""

    metrics: EventMetrics
    f1_with_camera: float
    windows_with_camera: int
    change_recall_with_camera: float | None  # None: no command changed what the rover does
    numeric_mse_with_camera: float

    @property
    def complete(self) -> bool:
        return self.metrics.windows == self.windows_with_camera

    @property
    def vision_gain(self) -> float | None:
        """None when the blind pass was stopped before it saw the same windows."""
        return self.f1_with_camera - self.metrics.f1 if self.complete else None

    @property
    def change_gain(self) -> float | None:
        """Recall of the commands that change what the rover does, with the camera minus
        blind: where the camera must matter (re-sends follow the teleop page's timer, which
        the state vector shows). None when incomplete or when no command changed anything."""
        seeing, blind = self.change_recall_with_camera, self.metrics.hold_last
        if not self.complete or seeing is None or blind is None:
            return None
        return seeing - blind.changes.recall

    @property
    def value_gain(self) -> float | None:
        """The share of the grey-frame value error that the camera removes: 1 - numericMse /
        blind numericMse (0 for a model that ignores the camera). None when incomplete or
        when the blind values are exact (no held-out command with values)."""
        blind = self.metrics.numeric_mse
        if not self.complete or blind <= 0:
            return None
        return 1.0 - self.numeric_mse_with_camera / blind

    def to_json(self) -> dict[str, float | int]:
        m = self.metrics
        return {
            **headline(m),
            "changeRecall": m.hold_last.changes.recall if m.hold_last else 0.0,
        }


def blind_score(
    model: Policy,
    windows: WindowSet,
    scoring: Scoring,
    with_camera: EventMetrics,
    should_stop: Callable[[], bool] = never,
) -> BlindScore:
    blind = evaluate(
        model, windows.subset(slice(0, with_camera.windows)), scoring, should_stop, True
    )
    changes = with_camera.hold_last.changes if with_camera.hold_last else None
    seeing = changes.recall if changes is not None and changes.events else None
    return BlindScore(blind, with_camera.f1, with_camera.windows, seeing, with_camera.numeric_mse)


@dataclass(frozen=True)
class HeldOutCurve:
    """One point of the learning curve on unseen sessions (the `evaluation` event)."""

    metrics: EventMetrics
    loss: float
    blind: BlindScore

    def to_json(self) -> dict[str, float | int | dict[str, float | int] | None]:
        m = self.metrics
        changes = m.hold_last.changes if m.hold_last else None
        return {
            **headline(m),
            "windows": m.windows,
            "heldOutLoss": self.loss,
            "changeRecall": changes.recall if changes else None,
            "changeNumericMse": changes.numeric_mse if changes else None,
            "valueErrorVsHoldLast": m.value_error_vs_hold_last(),
            "visionGain": self.blind.vision_gain,
            "changeVisionGain": self.blind.change_gain,
            "valueVisionGain": self.blind.value_gain,
            "blind": self.blind.to_json(),
        }


def held_out_curve(
    model: Policy, windows: WindowSet, scoring: Scoring, setup: LossSetup
) -> HeldOutCurve:
    predictions = predict(model, windows, scoring.batch_size, setup=setup)
    assert predictions.loss is not None
    metrics = score(predictions, windows, scoring)
    return HeldOutCurve(metrics, predictions.loss, blind_score(model, windows, scoring, metrics))
