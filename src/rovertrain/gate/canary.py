"""Whether a canary (a candidate published, not promoted, under `canaryMinutes`) replaces the
current model, from the field figures of the recordings each drove. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rovertrain.data.field import FieldFigures


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
