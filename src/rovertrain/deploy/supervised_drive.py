"""`rovertrain drive --supervised [--record ROOT]`: the policy drives fresh (field) worlds
while the human model watches, takes over outside the safety envelope and hands back
(`sim.supervised`, docs/simulator.md "Supervised driving"). One `rollout` event per seed with
its field figures (take-overs per 10 minutes of autonomy, ...), then `drove`. With --record,
each rollout becomes a recording under ROOT that the next job trains on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.protocol.events import EventStream
from rovertrain.sim.choices import CONTINUOUS, HAND_OVER
from rovertrain.sim.registry import lookup, supervised_names
from rovertrain.sim.rollout import AnyRollout, RolloutTrace
from rovertrain.sim.supervised import Envelope, SupervisionLog
from rovertrain.sim.world_protocol import FieldRecording, SupervisedRequest, Supervision

FIELD_ROVER = "rover-field"


def take_over_words(log: SupervisionLog) -> str:
    reasons = ", ".join(f"{name} {count}" for name, count in log.reasons().items() if count)
    return f"{len(log.take_overs)} take-overs" + (f" ({reasons})" if reasons else "")


def planned_sessions(
    record: Path | None, supervision: Supervision, model: str, seeds: Sequence[int]
) -> dict[int, FieldRecording]:
    """The recordings --record will write, refused up front if one exists already (a
    recording is never overwritten; a later round is driven by another model, other names)."""
    if record is None:
        return {}
    sessions = {
        seed: FieldRecording(record, supervision.session_id(model, seed), FIELD_ROVER, model)
        for seed in seeds
    }
    taken = [s.session_id for s in sessions.values() if s.directory.exists()]
    if taken:
        raise RovertrainError(
            ErrorCode.USAGE,
            f"--record {record}: {', '.join(taken)} already recorded (this model on these "
            "seeds); recordings are never overwritten: give other --seed values.",
        )
    return sessions


def drive_supervised(
    checkpoint: str,
    world: str,
    seconds: float,
    seeds: Sequence[int],
    record: str | None,
    stream: EventStream,
    driver: str = CONTINUOUS,
    start: str = HAND_OVER,
) -> int:
    from rovertrain.deploy.drive import rollout_line
    from rovertrain.deploy.replay import load_policy
    from rovertrain.protocol.console import console_line

    started = time.monotonic()

    # 1. The world, the policy, and the recordings to write (none may exist yet).
    supervision = lookup(world).supervision
    if supervision is None:
        raise RovertrainError(
            ErrorCode.USAGE, f"--supervised drives {', '.join(supervised_names())}; not {world!r}."
        )
    loaded = load_policy(checkpoint)
    model = str(loaded.identity.get("id") or "model")
    root = Path(record).resolve() if record is not None else None
    sessions = planned_sessions(root, supervision, model, seeds)
    envelope = Envelope()

    # 2. Every seed under supervision: a `rollout` event and a line on stderr each.
    def on_rollout(metrics: AnyRollout, trace: RolloutTrace, log: SupervisionLog) -> None:
        stream.emit("rollout", world=world, **metrics.event_fields())
        console_line(f"{rollout_line(metrics)}, {take_over_words(log)}")

    request = SupervisedRequest(
        loaded.policy, seeds, seconds, envelope, sessions.get, on_rollout, driver, start
    )
    report = supervision.drive(request)

    # 3. The summary: field figures pooled over the seeds, and what was recorded.
    elapsed = time.monotonic() - started
    simulated = seconds * len(seeds)
    recorded = (
        {"root": str(root), "sessions": [s.session_id for s in sessions.values()]}
        if root is not None
        else None
    )
    stream.emit(
        "drove",
        model=loaded.model_fields(),
        files={},
        elapsedSeconds=round(elapsed, 3),
        simulatedSeconds=round(simulated, 3),
        realtimeFactor=round(simulated / max(elapsed, 1e-9), 2),
        supervision={"envelope": envelope.event_fields(), "recorded": recorded},
        **report.summary_fields(),
    )
    for summary in report.summaries.values():
        if words := summary.own.words():
            console_line(words)
    return ExitCode.COMPLETED
