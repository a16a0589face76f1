"""The publication rules: whether a candidate that was evaluated is promoted. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rovertrain.gate.canary import CanaryJudgement
from rovertrain.gate.imitation import GateStatus
from rovertrain.gate.settings import Publication

MINUTE_WINDOWS = 600
"""100 ms windows per minute of driving."""


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
