"""What a replay adds up to, over the windows training would use (frame not stale, no
unsupported command): per command type the held-out evaluation's metrics (`event_metrics`)
plus confusion counts, the mean value error and how often the values agree with the person's; for stop-role types how early or late the
model's stop came; with --blind, how much of the F1 came from the camera.

Each figure is a frozen record whose `to_json()` is its part of the `replayed` event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, Schema
from rovertrain.deploy.replay_trace import HumanLabels, HumanWindows, TraceArrays
from rovertrain.learn.metrics import Score, event_metrics

STOP_MATCH_MS = 2000
"""A predicted stop within this distance of a human stop onset counts as that stop."""


@dataclass(frozen=True)
class TypeFigures:
    """One command type: confusion counts, the evaluator's metrics, the mean value error."""

    role: str
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    score: Score
    numeric_mse: float
    mean_abs_value_error: float | None  # None: the human never sent a value of this type
    value_agreement: float | None = None  # `learn.metrics.value_agreement`; None as above

    def to_json(self) -> dict[str, object]:
        return {
            "role": self.role,
            "truePositive": self.true_positive,
            "falsePositive": self.false_positive,
            "falseNegative": self.false_negative,
            "trueNegative": self.true_negative,
            "precision": self.score.precision,
            "recall": self.score.recall,
            "f1": self.score.f1,
            "numericMse": self.numeric_mse,
            "meanAbsValueError": self.mean_abs_value_error,
            "valueAgreement": self.value_agreement,
        }


@dataclass(frozen=True)
class OverallFigures:
    """Every type together, as the job's held-out evaluation reports it."""

    windows: int
    score: Score
    numeric_mse: float
    stop_recall: float
    movement_recall: float
    usable_windows: int
    timely_precision: float  # `learn.metrics.timely_precision`, as the gate judges it
    value_agreement: float | None = None

    @property
    def f1(self) -> float:
        return self.score.f1

    def to_json(self) -> dict[str, object]:
        return {
            "windows": self.windows,
            "precision": self.score.precision,
            "timelyPrecision": self.timely_precision,
            "recall": self.score.recall,
            "f1": self.score.f1,
            "numericMse": self.numeric_mse,
            "valueAgreement": self.value_agreement,
            "stopRecall": self.stop_recall,
            "movementRecall": self.movement_recall,
            "usableWindows": self.usable_windows,
        }


@dataclass(frozen=True)
class WindowFigures:
    """Predictions against the human's commands over the usable windows."""

    types: dict[str, TypeFigures]
    overall: OverallFigures


@dataclass(frozen=True)
class StopTiming:
    """Human stop onsets and, for each one matched, how far the nearest predicted stop was
    (ms: + late, - early). `offsets` None: nothing to time (the schema has no stop-role
    type, or no window was usable)."""

    onsets: int = 0
    offsets: tuple[float, ...] | None = None

    def to_json(self) -> dict[str, object]:
        if self.offsets is None:
            return {"onsets": self.onsets, "matched": 0, "matchWindowMs": STOP_MATCH_MS}
        offsets = self.offsets
        fields: dict[str, object] = {
            "onsets": self.onsets,
            "matched": len(offsets),
            "missed": self.onsets - len(offsets),
            "matchWindowMs": STOP_MATCH_MS,
        }
        if offsets:
            fields.update(
                medianOffsetMs=float(np.median(offsets)),
                meanOffsetMs=float(np.mean(offsets)),
                earlyStops=sum(offset < 0 for offset in offsets),
                lateStops=sum(offset > 0 for offset in offsets),
            )
        return fields


@dataclass(frozen=True)
class CameraShare:
    """--blind: the sighted model's F1 next to the blind one's, overall and per type."""

    sighted: WindowFigures
    blind: WindowFigures

    def to_json(self) -> dict[str, object]:
        sighted, blind = self.sighted.overall.f1, self.blind.overall.f1
        return {
            "sightedF1": sighted,
            "blindF1": blind,
            "f1FromCamera": sighted - blind,
            "perType": {
                name: {"sightedF1": row.score.f1, "blindF1": self.blind.types[name].score.f1}
                for name, row in self.sighted.types.items()
            },
        }


@dataclass(frozen=True)
class ReplayFigures:
    """The `replayed` event's figures: types, overall, stops and (--blind) camera."""

    figures: WindowFigures
    stops: StopTiming
    camera: CameraShare | None = None

    def to_json(self) -> dict[str, object]:
        fields: dict[str, object] = {
            "types": {name: row.to_json() for name, row in self.figures.types.items()},
            "overall": self.figures.overall.to_json(),
            "stops": self.stops.to_json(),
        }
        if self.camera is not None:
            fields["camera"] = self.camera.to_json()
        return fields


def window_figures(
    schema: Schema,
    predicted: np.ndarray,
    predicted_values: np.ndarray,
    human: HumanWindows,
) -> WindowFigures:
    """Per type: confusion counts and the evaluator's metrics; and the overall score."""
    fires, values, available = human.fires, human.values, human.available
    metrics = event_metrics(
        predicted,
        predicted_values,
        fires,
        values,
        available,
        schema,
        np.zeros(SLOTS),
        human.fires_next,
    )
    types: dict[str, TypeFigures] = {}
    for index, slot in enumerate(schema):
        p, a = predicted[:, index], fires[:, index]
        mask = available[:, index] & a[:, None]
        error = np.abs(predicted_values[:, index] - values[:, index])[mask]
        row = metrics.per_slot[index]
        types[slot["type"]] = TypeFigures(
            role=slot["role"],
            true_positive=int((p & a).sum()),
            false_positive=int((p & ~a).sum()),
            false_negative=int((~p & a).sum()),
            true_negative=int((~p & ~a).sum()),
            score=row.score,
            numeric_mse=row.numeric_mse,
            mean_abs_value_error=float(error.mean()) if error.size else None,
            value_agreement=row.value_agreement,
        )
    overall = OverallFigures(
        windows=metrics.windows,
        score=metrics.score,
        numeric_mse=metrics.numeric_mse,
        stop_recall=metrics.stop_recall,
        movement_recall=metrics.movement_recall,
        usable_windows=len(predicted),
        value_agreement=metrics.value_agreement,
        timely_precision=metrics.timely_precision,
    )
    return WindowFigures(types, overall)


def stop_timing(
    schema: Schema, ticks: np.ndarray, predicted: np.ndarray, fires: np.ndarray
) -> StopTiming:
    """For each human stop onset, the nearest predicted stop within ±2 s."""
    stops = [index for index, slot in enumerate(schema) if slot["role"] == "stop"]
    if not stops or not len(ticks):
        return StopTiming()
    human: np.ndarray = np.asarray(fires[:, stops].any(axis=1))
    model: np.ndarray = np.asarray(predicted[:, stops].any(axis=1))
    onsets = ticks[human & ~np.concatenate([[False], human[:-1]])]
    fired = ticks[model]
    offsets = []
    for onset in onsets:
        if len(fired):
            nearest = fired[np.argmin(np.abs(fired - onset))]
            if abs(nearest - onset) <= STOP_MATCH_MS:
                offsets.append(float(nearest - onset))
    return StopTiming(onsets=len(onsets), offsets=tuple(offsets))


def replay_figures(
    trace: TraceArrays, human: HumanLabels, schema: Schema, threshold: float
) -> ReplayFigures:
    """The figures over the usable windows; with a sighted run (--blind), the camera's share."""
    usable = trace.usable
    sent = human.gather(trace.human[usable])
    values = trace.values[usable]
    predicted = trace.probability[usable] >= threshold
    figures = window_figures(schema, predicted, values, sent)
    stops = stop_timing(schema, trace.ticks[usable], predicted, sent.fires)
    camera = None
    if len(trace.sighted):
        sighted = window_figures(schema, trace.sighted[usable] >= threshold, values, sent)
        camera = CameraShare(sighted=sighted, blind=figures)
    return ReplayFigures(figures, stops, camera)
