"""Event metrics, baselines, the imitation gate and the publication rules. Pure numpy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rovertrain.data.command_schema import Schema


def _prf(true_positive: int, predicted: int, actual: int) -> tuple[float, float, float]:
    precision = true_positive / predicted if predicted else 0.0
    recall = true_positive / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def frequency_baselines(actual: np.ndarray, frequencies: np.ndarray) -> list[dict[str, Any]]:
    """F1 of predictors that know only how often each slot fired in training.

    `always`: fire every slot that ever fired in training, in every window.
    `frequency`: fire slot s at random with its training frequency (expected F1).
    """
    slots = actual.shape[1]
    freq = np.asarray(frequencies[:slots], dtype=np.float64)
    positives = int(actual.sum())
    rows = []
    seen = freq > 0
    predicted_always = int(seen.sum()) * actual.shape[0]
    true_always = int(actual[:, seen].sum())
    precision, recall, f1 = _prf(true_always, predicted_always, positives)
    rows.append({"rule": "always", "precision": precision, "recall": recall, "f1": f1})
    expected_predicted = float((freq * actual.shape[0]).sum())
    expected_true = float((actual.sum(axis=0) * freq).sum())
    p = expected_true / expected_predicted if expected_predicted else 0.0
    r = expected_true / positives if positives else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    rows.append({"rule": "frequency", "precision": p, "recall": r, "f1": f})
    return rows


def event_metrics(
    predicted: np.ndarray,
    predicted_values: np.ndarray,
    actual: np.ndarray,
    target_values: np.ndarray,
    available: np.ndarray,
    schema: Schema,
    frequencies: np.ndarray,
) -> dict[str, Any]:
    slots = len(schema)
    predicted = predicted[:, :slots]
    actual = actual[:, :slots]
    true_positive = predicted & actual
    precision, recall, f1 = _prf(int(true_positive.sum()), int(predicted.sum()), int(actual.sum()))
    mask = available[:, :slots] & actual[:, :, None]
    errors = (predicted_values[:, :slots] - target_values[:, :slots]) ** 2
    mse = float(errors[mask].mean()) if mask.any() else 0.0
    per_slot = []
    stop_actual = stop_hit = movement_actual = movement_hit = 0
    for index, slot in enumerate(schema):
        tp = int(true_positive[:, index].sum())
        n_actual = int(actual[:, index].sum())
        p, r, f = _prf(tp, int(predicted[:, index].sum()), n_actual)
        slot_mask = mask[:, index]
        per_slot.append(
            {
                "type": slot["type"],
                "role": slot["role"],
                "events": n_actual,
                "predicted": int(predicted[:, index].sum()),
                "precision": p,
                "recall": r,
                "f1": f,
                "numericMse": float(errors[:, index][slot_mask].mean()) if slot_mask.any() else 0.0,
            }
        )
        if slot["role"] == "stop":
            stop_actual += n_actual
            stop_hit += tp
        elif slot["role"] == "movement":
            movement_actual += n_actual
            movement_hit += tp
    return {
        "windows": int(actual.shape[0]),
        "positiveActions": int(actual.sum()),
        "predictedActions": int(predicted.sum()),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "numericMse": mse,
        "stopEvents": stop_actual,
        "stopRecall": stop_hit / stop_actual if stop_actual else 0.0,
        "movementEvents": movement_actual,
        "movementRecall": movement_hit / movement_actual if movement_actual else 0.0,
        "perSlot": per_slot,
        "baselines": {"trainingFrequency": frequency_baselines(actual, frequencies)},
    }


def gate_reasons(
    measured: dict[str, Any],
    gate: Any,
    expected_windows: int,
    held_out_sessions: int,
    unsupported_events: int,
) -> list[str]:
    """The imitation gate's 13 conditions; an empty list means the gate passed."""
    baseline_f1 = max(
        (row["f1"] for row in measured.get("baselines", {}).get("trainingFrequency", [])),
        default=0.0,
    )
    conditions: Sequence[tuple[bool, str]] = (
        (unsupported_events == 0, "Held-out controls are not fully represented; see unsupportedCommands"),
        (measured["windows"] == expected_windows, "Evaluation interrupted"),
        (held_out_sessions >= gate.minHeldOutSessions, f"Need {gate.minHeldOutSessions} usable held-out recordings"),
        (measured["windows"] >= gate.minHeldOutWindows, f"Need {gate.minHeldOutWindows} held-out windows"),
        (measured["positiveActions"] >= gate.minCommandEvents, f"Need {gate.minCommandEvents} held-out command events"),
        (measured["stopEvents"] >= gate.minStopEvents, f"Need {gate.minStopEvents} held-out stop events"),
        (measured["movementEvents"] >= gate.minMovementEvents, f"Need {gate.minMovementEvents} held-out movement commands"),
        (measured["movementRecall"] >= gate.minMovementRecall, f"Movement command recall below {gate.minMovementRecall:g}"),
        (measured["precision"] >= gate.minPrecision, f"Command precision below {gate.minPrecision:g}"),
        (measured["recall"] >= gate.minRecall, f"Command recall below {gate.minRecall:g}"),
        (measured["stopRecall"] >= gate.minStopRecall, f"Stop recall below {gate.minStopRecall:g}"),
        (measured["f1"] > baseline_f1, "Command F1 does not beat the training-frequency baseline"),
        (measured["numericMse"] <= gate.maxNumericMse, f"Command parameter error above {gate.maxNumericMse:g}"),
    )  # fmt: skip
    return [reason for passed, reason in conditions if not passed]


def publication_reasons(
    distinct_minutes: float,
    new_minutes: float,
    steps_since_publication: int,
    evaluation_status: str,
    stop_reason: str | None,
    config: Any,
) -> list[str]:
    """Why this candidate should not be promoted; empty means promote."""
    reasons = []
    if distinct_minutes < config.minimumDrivingMinutes:
        reasons.append("Collecting distinct driving footage")
    if new_minutes < config.newDrivingMinutesPerModel:
        reasons.append("Waiting for new driving footage since last publication")
    if steps_since_publication < config.checkpointEverySteps:
        reasons.append("Training steps below publication interval")
    if evaluation_status != "passed imitation gate":
        reasons.append(evaluation_status)
    if stop_reason:
        reasons.append(stop_reason)
    return reasons
