"""Field figures: how a policy drove under supervision, the way driving fleets report it.

One definition for every place that reports them (a supervised rollout, a recording's
`by: policy` windows, a model's sessions pooled): the share of the time the policy drove,
take-overs per 10 minutes of autonomy, and the mean autonomous time between take-overs.
Pure; `pooled` adds sessions up before dividing, so a long session weighs more than a short
one (a per-session mean would let a 10 s session with one take-over dominate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import TICK_MS

TEN_MINUTES_S = 600.0
UNKNOWN_MODEL = "unknown"
"""Where supervised recordings are pooled whose session.json does not name the model."""


@dataclass(frozen=True)
class FieldFigures:
    supervised_seconds: float  # the time a policy was meant to drive (after the hand-over)
    autonomous_seconds: float  # of which the policy drove, nobody having taken over
    take_overs: int
    reasons: Mapping[str, int] | None = None  # take-overs by cause, where it is known

    @staticmethod
    def of_windows(supervised: int, autonomous: int, take_overs: int) -> FieldFigures:
        """From counts of 100 ms windows, as a job labels a recording."""
        return FieldFigures(
            supervised * TICK_MS / 1000.0, autonomous * TICK_MS / 1000.0, take_overs
        )

    @staticmethod
    def of_event(fields: Mapping[str, Any]) -> FieldFigures:
        """Read back from `event_fields` (an event, model.json's `field`)."""
        reasons = fields.get("takeOverReasons")
        return FieldFigures(
            supervised_seconds=float(fields["supervisedSeconds"]),
            autonomous_seconds=float(fields["autonomousSeconds"]),
            take_overs=int(fields["takeOvers"]),
            reasons=dict(reasons) if isinstance(reasons, dict) else None,
        )

    def words(self) -> str:
        """The figures for a person (stderr, `make demo`, `rovertrain models`)."""
        share, per_10 = self.policy_share, self.take_overs_per_10_min
        between = self.mean_seconds_between_take_overs
        reasons = ", ".join(f"{k} {v}" for k, v in (self.reasons or {}).items() if v)
        return (
            f"supervised: the policy drove {share or 0.0:.1%} of the time; "
            f"{self.take_overs} take-overs"
            + (f" ({reasons})" if reasons else "")
            + ("" if per_10 is None else f", {per_10:.1f} per 10 min of autonomy")
            + ("" if between is None else f", one every {between:.0f} s")
        )

    @property
    def policy_share(self) -> float | None:
        if self.supervised_seconds <= 0:
            return None
        return min(1.0, self.autonomous_seconds / self.supervised_seconds)

    @property
    def take_overs_per_10_min(self) -> float | None:
        """None: no autonomous time to divide by."""
        if self.autonomous_seconds <= 0:
            return None
        return self.take_overs * TEN_MINUTES_S / self.autonomous_seconds

    @property
    def mean_seconds_between_take_overs(self) -> float | None:
        """Autonomous seconds per take-over; None without a take-over (nothing to average)."""
        return self.autonomous_seconds / self.take_overs if self.take_overs else None

    def event_fields(self) -> JsonObject:
        def rounded(value: float | None, digits: int) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "supervisedSeconds": round(self.supervised_seconds, 2),
            "autonomousSeconds": round(self.autonomous_seconds, 2),
            "policyShare": rounded(self.policy_share, 4),
            "takeOvers": self.take_overs,
            "takeOversPer10Minutes": rounded(self.take_overs_per_10_min, 3),
            "meanSecondsBetweenTakeOvers": rounded(self.mean_seconds_between_take_overs, 2),
            **({} if self.reasons is None else {"takeOverReasons": {**self.reasons}}),
        }


def pooled(figures: Iterable[FieldFigures]) -> FieldFigures:
    """Sessions (or rollouts) added up; reasons only where every row knows them."""
    rows = list(figures)
    reasons: dict[str, int] | None = None
    if rows and all(row.reasons is not None for row in rows):
        reasons = {}
        for row in rows:
            for reason, count in (row.reasons or {}).items():
                reasons[reason] = reasons.get(reason, 0) + count
    return FieldFigures(
        supervised_seconds=sum(row.supervised_seconds for row in rows),
        autonomous_seconds=sum(row.autonomous_seconds for row in rows),
        take_overs=sum(row.take_overs for row in rows),
        reasons=reasons,
    )


__all__ = ["UNKNOWN_MODEL", "FieldFigures", "pooled"]
