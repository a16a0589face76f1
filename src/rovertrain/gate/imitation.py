"""The imitation gate: what the held-out evaluation must show before a model is promoted;
pure decisions over measured figures (no torch, no av, no I/O: unit-tested on plain numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rovertrain.gate.settings import Gate
from rovertrain.learn.metrics import EventMetrics


class GateStatus(StrEnum):
    PASSED = "passed imitation gate"
    NOT_MET = "imitation gate not met"
    WAITING = "waiting for held-out sessions"
    NO_SUPPORTED_WINDOWS = "No supported held-out windows"


@dataclass(frozen=True)
class HeldOutSupport:
    """What the held-out sessions contain that the policy has no slot for; and whether the
    recordings use a stop-role command at all (`stops_recorded`: the training sessions sent
    one). Recordings that never stop (a racing game's teleop) leave nothing to imitate there:
    the stop conditions do not apply, and the evaluation's stopEvents 0 says so."""

    sessions: int
    unsupported_command_events: int
    unsupported_windows: int
    stops_recorded: bool = True
    autonomous_windows: int = 0  # held-out windows a policy drove: left out, not scored


@dataclass(frozen=True)
class CameraGain:
    """What the camera adds: the held-out figures minus those of the same weights on a
    constant grey frame. `f1`: command F1 (`visionGain`; None: the blind evaluation was
    interrupted). `changes`: recall of the commands that change what the rover does
    (`changeVisionGain`; None also when no held-out command changed anything). `values`: the
    share of the grey-frame value error the camera removes (`valueVisionGain`; None also
    when no held-out command has values)."""

    f1: float | None
    changes: float | None
    values: float | None = None


def _camera_conditions(camera: CameraGain, g: Gate) -> Sequence[tuple[bool, str]]:
    """The camera must add to when the model fires (F1), to finding the commands that change
    what the rover does, or to what it sends (the values: where a teleop page sends at almost
    every tick, when is the page's and only what is the camera's); a model that ignores the
    camera adds exactly 0 to all three."""
    if camera.f1 is None:
        return ((False, "Blind evaluation interrupted"),)
    changes, values = camera.changes, camera.values
    adds = (
        camera.f1 >= g.minVisionGain
        or (changes is not None and changes >= g.minChangeVisionGain)
        or (values is not None and values >= g.minValueVisionGain)
    )
    change_text = "no" if changes is None else f"{changes:.3f}"
    value_text = (
        "; no held-out command has values"
        if values is None
        else f", and removes {values:.3f} of their value error (below {g.minValueVisionGain:g})"
    )
    return (
        (
            adds,
            f"The camera adds {camera.f1:.3f} F1 (below {g.minVisionGain:g}) and {change_text} "
            "recall of the commands that change what the rover does (below "
            f"{g.minChangeVisionGain:g}) over grey frames{value_text}",
        ),
    )


def stop_conditions_apply(measured: EventMetrics, support: HeldOutSupport) -> bool:
    """The stop conditions judge recordings that use a stop-role command (see
    `HeldOutSupport`); the evaluation reports it as `stopConditionsApplied`."""
    return support.stops_recorded or measured.stop_events > 0


def gate_reasons(
    measured: EventMetrics,
    gate: Gate,
    expected_windows: int,
    support: HeldOutSupport,
    camera: CameraGain,
) -> list[str]:
    """The imitation gate's conditions; an empty list means the gate passed.

    `camera`: what the camera adds over grey frames. docs/learning.md has the measurements the
    default thresholds come from.
    """
    g = gate
    value_ratio = measured.value_error_vs_hold_last()
    value_error = measured.gated_numeric_mse()
    stops_apply = stop_conditions_apply(measured, support)
    conditions: Sequence[tuple[bool, str]] = (
        (
            support.unsupported_command_events == 0,
            "Held-out controls are not fully represented; see unsupportedCommands",
        ),
        (measured.windows == expected_windows, "Evaluation interrupted"),
        (
            support.sessions >= g.minHeldOutSessions,
            f"Need {g.minHeldOutSessions} usable held-out recordings",
        ),
        (measured.windows >= g.minHeldOutWindows, f"Need {g.minHeldOutWindows} held-out windows"),
        (
            measured.positive_actions >= g.minCommandEvents,
            f"Need {g.minCommandEvents} held-out command events",
        ),
        (
            not stops_apply or measured.stop_events >= g.minStopEvents,
            f"Need {g.minStopEvents} held-out stop events",
        ),
        (
            measured.movement_events >= g.minMovementEvents,
            f"Need {g.minMovementEvents} held-out movement commands",
        ),
        (
            measured.movement_recall >= g.minMovementRecall,
            f"Movement command recall below {g.minMovementRecall:g}",
        ),
        (
            measured.timely_precision >= g.minPrecision,
            f"Command precision below {g.minPrecision:g} (a fire one tick early counted on time)",
        ),
        (measured.recall >= g.minRecall, f"Command recall below {g.minRecall:g}"),
        (
            not stops_apply or measured.stop_recall >= g.minStopRecall,
            f"Stop recall below {g.minStopRecall:g}",
        ),
        (
            measured.f1 > measured.best_baseline_f1(),
            "Command F1 does not beat the training-frequency baseline",
        ),
        (
            value_error is None or value_error <= g.maxNumericMse,
            f"Command parameter error above {g.maxNumericMse:g}",
        ),
        *_camera_conditions(camera, g),
        (
            value_ratio is None or value_ratio <= g.maxValueErrorVsHoldLast,
            f"Value error on the commands that change what the rover does is {value_ratio or 0:.2f}x "
            "that of repeating the last command, "
            f"above {g.maxValueErrorVsHoldLast:g}x",
        ),
    )
    return [reason for passed, reason in conditions if not passed]


def gate_status(reasons: list[str]) -> GateStatus:
    return GateStatus.NOT_MET if reasons else GateStatus.PASSED


def unevaluated_status(support: HeldOutSupport, held_out_windows: int) -> GateStatus:
    """The status when the held-out windows cannot be scored (none, or stopped)."""
    if support.unsupported_command_events and not held_out_windows:
        return GateStatus.NO_SUPPORTED_WINDOWS
    return GateStatus.WAITING
