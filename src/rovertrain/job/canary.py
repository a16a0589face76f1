"""Promotion from the field (`canaryMinutes` > 0, `canaryWhen`; docs/learning.md "Promotion
from the field"): a candidate that passes is published as a canary instead of promoted (by
default once the current model drove under supervision); a later job
judges the newest canary by the recordings it drove under supervision (`gate.canary_verdict`)
and promotes it when it drove enough minutes with fewer take-overs than the current model.

Stateless across jobs: the pending canary is the newest valid checkpoint published as one
after the current model. One canary is on trial at a time: while it waits for field time, a
passing candidate is published neither promoted nor as a canary (a scheduler that runs jobs
often would otherwise replace the canary before any rover drove it); once it is judged, the
job's candidate becomes the next canary. A rejected canary is superseded by the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rovertrain.data.dataset import Dataset
from rovertrain.gate.canary import CanaryJudgement, CanaryVerdict, canary_verdict
from rovertrain.gate.imitation import GateStatus
from rovertrain.gate.publication import PublicationDecision
from rovertrain.gate.settings import ALWAYS
from rovertrain.store.catalogue import ModelRecord, catalogue
from rovertrain.store.current import read_current, write_current


def pending_canary(root: Path) -> tuple[ModelRecord | None, str | None]:
    """(the canary awaiting judgement, the current model's id); each None when there is none.
    Only a checkpoint that verifies and passed the gate counts as a canary."""
    records = catalogue(root)
    pointer, folder, _ = read_current(root)
    current = str(pointer["id"]) if pointer is not None and folder is not None else None
    since = next((r.created_at or 0 for r in records if r.id == current), 0)
    waiting = [
        r
        for r in records
        if r.canary
        and r.valid
        and r.evaluation == GateStatus.PASSED
        and (r.created_at or 0) > since
    ]
    return (waiting[-1] if waiting else None), current


@dataclass(frozen=True)
class FleetField:
    """What a job knows of the fleet before it publishes: the judgement of the pending canary
    (None without one), whether a current model exists once it is applied, and whether that
    model drove under supervision in this job's recordings (the fleet runs the field loop)."""

    judged: CanaryJudgement | None
    has_current: bool
    current_drove: bool


def judge_canary(root: Path, dataset: Dataset, minutes: float) -> FleetField:
    """Judge the pending canary on this job's recordings (`promote_canary` applies a
    promotion once this job's own checkpoint is published)."""
    canary, current = pending_canary(root)
    field = dataset.field_by_model()
    current_field = None if current is None else field.get(current)
    drove = current_field is not None and current_field.supervised_seconds > 0
    if canary is None:
        return FleetField(None, current is not None, drove)
    verdict, reason = canary_verdict(field.get(canary.id), current_field, minutes)
    judged = CanaryJudgement(canary.id, verdict, reason, canary.name)
    if verdict is CanaryVerdict.PROMOTED:
        return FleetField(judged, True, True)  # it drove its minutes under supervision
    return FleetField(judged, current is not None, drove)


def promote_canary(root: Path, judged: CanaryJudgement | None) -> None:
    """Point current.json at the judged canary when it earned it."""
    if judged is not None and judged.verdict is CanaryVerdict.PROMOTED:
        write_current(root, judged.model, judged.name)


def canary_decision(
    decision: PublicationDecision, fleet: FleetField, when: str
) -> PublicationDecision:
    """This job's candidate under `canaryMinutes`: promoted when there is no current model
    (nothing to protect) or, under `canaryWhen` fieldRecord, when the current model never
    drove under supervision (no field loop to take part in); held back while another canary
    is on trial; a canary otherwise (only one that passes: a blocked candidate is published
    as it always was)."""
    judged = fleet.judged
    if judged is not None and judged.verdict is CanaryVerdict.WAITING:
        on_trial = f"Canary {judged.model} still on trial ({judged.reason})"
        return replace(decision, judged=judged, blockers=(*decision.blockers, on_trial))
    required = fleet.has_current and (when == ALWAYS or fleet.current_drove)
    return replace(decision, canary=required and not decision.blockers, judged=judged)
