"""The imitation gate and the publication rules: pure decisions over measured figures.

No torch, no av, no I/O: every rule here is unit-tested on plain numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rovertrain.data.field import FieldFigures
from rovertrain.gate_settings import Gate, Publication
from rovertrain.learn.metrics import EventMetrics

MINUTE_WINDOWS = 600
"""100 ms windows per minute of driving."""


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
        (measured.precision >= g.minPrecision, f"Command precision below {g.minPrecision:g}"),
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
            measured.numeric_mse <= g.maxNumericMse,
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


class CanaryVerdict(StrEnum):
    WAITING = "waiting"  # has not driven enough supervised minutes yet
    PROMOTED = "promoted"
    REJECTED = "rejected"  # drove them, with no fewer take-overs than the current model


@dataclass(frozen=True)
class CanaryJudgement:
    """What a job decided of the pending canary (`publication.judgedCanary`)."""

    model: str
    verdict: CanaryVerdict
    reason: str
    name: str | None = None  # the canary's friendly name (current.json's)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "verdict": str(self.verdict), "reason": self.reason}


@dataclass(frozen=True)
class PublicationDecision:
    """Whether a candidate is promoted, and the seed's publication figures."""

    distinct_minutes: float
    new_minutes: float
    minimum_minutes: float
    required_new_minutes: float
    blockers: tuple[str, ...]
    canary: bool = False  # passed, published as a canary (`canaryMinutes`): not promoted yet
    judged: CanaryJudgement | None = None  # the earlier canary this job judged

    @property
    def promote(self) -> bool:
        return not self.blockers and not self.canary

    @property
    def reason(self) -> str:
        if self.canary and not self.blockers:
            return (
                "Canary: promoted by a later job once it drives the supervised minutes "
                "(canaryMinutes) with fewer take-overs than the current model"
            )
        return "; ".join(self.blockers) or "Latest updated"

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "distinctMinutes": self.distinct_minutes,
            "newMinutes": self.new_minutes,
            "minimumMinutes": self.minimum_minutes,
            "requiredNewMinutes": self.required_new_minutes,
            "reason": self.reason,
        }
        if self.canary and not self.blockers:
            document["canary"] = True
        if self.judged is not None:
            document["judgedCanary"] = self.judged.to_json()
        return document


@dataclass(frozen=True)
class PublicationHistory:
    """What earlier jobs published: counted in distinct windows and training steps."""

    distinct_windows: int
    published_windows: int
    steps_since_publication: int


def publication_reasons(
    distinct_minutes: float,
    new_minutes: float,
    steps_since_publication: int,
    evaluation_status: str,
    stop_reason: str | None,
    rules: Publication,
) -> list[str]:
    """Why this candidate should not be promoted; empty means promote."""
    reasons = []
    if distinct_minutes < rules.minimumDrivingMinutes:
        reasons.append("Collecting distinct driving footage")
    if new_minutes < rules.newDrivingMinutesPerModel:
        reasons.append("Waiting for new driving footage since last publication")
    if steps_since_publication < rules.checkpointEverySteps:
        reasons.append("Training steps below publication interval")
    if evaluation_status != GateStatus.PASSED:
        reasons.append(evaluation_status)
    if stop_reason:
        reasons.append(stop_reason)
    return reasons


def publication_decision(
    history: PublicationHistory, status: str, stop_label: str | None, rules: Publication
) -> PublicationDecision:
    distinct = history.distinct_windows / MINUTE_WINDOWS
    new = (history.distinct_windows - history.published_windows) / MINUTE_WINDOWS
    blockers = publication_reasons(
        distinct, new, history.steps_since_publication, status, stop_label, rules
    )
    return PublicationDecision(
        distinct_minutes=distinct,
        new_minutes=new,
        minimum_minutes=rules.minimumDrivingMinutes,
        required_new_minutes=rules.newDrivingMinutesPerModel,
        blockers=tuple(str(blocker) for blocker in blockers),
    )


def canary_verdict(
    canary: FieldFigures | None, current: FieldFigures | None, minutes: float
) -> tuple[CanaryVerdict, str]:
    """Whether a canary (a candidate published, not promoted, under `canaryMinutes`) replaces
    the current model, from the field figures of the recordings each drove: the canary once it
    drove `minutes` supervised with fewer take-overs per 10 minutes of autonomy than the
    current model, or none where the current model had none either. A current model with
    fewer than `minutes` of field record has no rate to beat: the canary's minutes suffice
    (the reason says so, the operator reads it)."""
    driven = 0.0 if canary is None else canary.supervised_seconds / 60.0
    rate = None if canary is None else canary.take_overs_per_10_min
    on_record = current is not None and current.supervised_seconds / 60.0 >= minutes
    current_rate = current.take_overs_per_10_min if current is not None and on_record else None
    better = (
        rate is not None
        and current_rate is not None
        and (rate < current_rate or rate == current_rate == 0)
    )
    words = f"{rate or 0:.1f} take-overs per 10 min over {driven:.1f} supervised minutes"
    conditions = (
        (
            driven < minutes,
            CanaryVerdict.WAITING,
            f"drove {driven:.1f} of {minutes:g} supervised minutes",
        ),
        (
            rate is None,
            CanaryVerdict.REJECTED,
            f"drove {driven:.1f} supervised minutes without any autonomous time",
        ),
        (
            current_rate is None,
            CanaryVerdict.PROMOTED,
            f"{words}; the current model has less than {minutes:g} minutes of field record to compare with",
        ),
        (
            better,
            CanaryVerdict.PROMOTED,
            f"{words}, against the current model's {current_rate or 0:.1f}",
        ),
    )
    for applies, verdict, reason in conditions:
        if applies:
            return verdict, reason
    return CanaryVerdict.REJECTED, (
        f"{words}: no fewer than the current model's {current_rate or 0:.1f}"
    )


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
