"""The job's budget rules: whether there is enough data to train at all, and when training
must stop so that evaluation and publication still fit in the job's time. Pure."""

from __future__ import annotations


def not_enough_data(samples: int, any_command: bool, stopped: bool, minimum: int) -> str | None:
    """Why the job cannot train at all, or None."""
    if stopped:
        return "Stopped/time limit"
    if samples < minimum or not any_command:
        return "Waiting for enough training-partition samples with human actions"
    return None


def training_deadline(max_seconds: float, held_out_windows: int) -> float:
    """When training must stop so evaluation and publication still fit in the budget."""
    # Evaluation runs the held-out windows twice (with the camera, and blind).
    reserve = min(max_seconds * 0.25, 3.0 + held_out_windows * 0.004)
    return max_seconds - reserve
