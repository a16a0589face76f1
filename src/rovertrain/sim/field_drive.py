"""The supervised rollouts of a rover world (its registry entry's `supervision`): the policy
drives fresh worlds under the human model's supervision (`sim.supervised`); each rollout may
be written as a recording (`sim.recorder`). The command around it is `deploy.supervised_drive`.

The worlds are the FIELD family of seeds (`worlds.rollout_scenario`), never the ones a policy
is judged on. A recording is what a rover's recorder writes during a supervised drive:
the camera (the pictures the policy was ticked with, every 100 ms, H.264), every command
sent, the policy's marked `by: policy`, and in session.json the model that drove
(`drivenBy`, informational). The next job trains on the person's commands only
(docs/recording-format.md).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from rovertrain.contracts.observation import TICK_MS
from rovertrain.data.field import FieldFigures, pooled
from rovertrain.data.recording import Command, CommandLine
from rovertrain.data.windows import driving_field_figures
from rovertrain.sim.choices import CONTINUOUS, HAND_OVER, KEYBOARD, drift_of
from rovertrain.sim.render import HEIGHT, WIDTH
from rovertrain.sim.rollout import (
    FRAME_MS,
    NO_FIGURES,
    ClosedLoopReport,
    FiguresKind,
    FrameSink,
    NoOwnFigures,
    RolloutMetrics,
    RolloutTrace,
    report_of,
    rollout_metrics,
    run_controller,
    with_own,
)
from rovertrain.sim.supervised import Envelope, SupervisedDriver, SupervisedPolicy, SupervisionLog
from rovertrain.sim.world_protocol import FieldRecording as FieldSession
from rovertrain.sim.world_protocol import SupervisedRequest
from rovertrain.sim.worlds import FIELD, WORLDS, human_opening, rollout_scenario
from rovertrain.store.durable import fsync_directory, rename_no_replace

RECORDED_FPS = 1000 // FRAME_MS
FIELD_PROFILES = {CONTINUOUS: "gamepad", KEYBOARD: "keyboard"}
"""A supervised recording's `controlProfile`, by the supervising person's driver."""


def field_session_id(world: str, model: str, seed: int) -> str:
    """`PREFIX-field-MODEL8-SEED`: one name per world, model and field seed, so that rounds
    driven by successive models never collide."""
    short = "".join(ch for ch in model if ch.isalnum())[:8] or "model"
    return f"{WORLDS[world].session_prefix}-field-{short}-{seed:04d}"


@dataclass(frozen=True)
class TakeOvers:
    """A supervised rollout's own figures: its field figures (`data.field`), as the event's
    `field` object (the rollout's line on stderr ends with the take-overs' reasons instead)."""

    figures: FieldFigures

    def own_fields(self) -> dict[str, object]:
        return {"field": self.figures.event_fields()}

    def words(self) -> str:
        return ""


@dataclass(frozen=True)
class PooledTakeOvers(TakeOvers):
    """The field figures of every seed added up (`data.field.pooled`), in a line of words."""

    def words(self) -> str:
        return self.figures.words()


def pooled_take_overs(rows: Sequence[TakeOvers]) -> PooledTakeOvers:
    return PooledTakeOvers(pooled(row.figures for row in rows))


def no_margin(policy: PooledTakeOvers, baseline: PooledTakeOvers) -> NoOwnFigures:
    return NO_FIGURES  # one controller: the policy under supervision


TAKE_OVERS: FiguresKind[TakeOvers, PooledTakeOvers, NoOwnFigures] = FiguresKind(
    pooled_take_overs, no_margin
)
SUPERVISED = "supervised"
SupervisedRollout = tuple[RolloutMetrics[TakeOvers], RolloutTrace, SupervisionLog]


def supervised_rollout(
    world: str,
    seed: int,
    policy: SupervisedPolicy,
    seconds: float,
    envelope: Envelope,
    on_frame: FrameSink | None = None,
    person: str = CONTINUOUS,
    start: str = HAND_OVER,
) -> SupervisedRollout:
    """The policy drives field seed `seed` of `world` under supervision for `seconds`; the
    supervising person drives with `person` (`sim.choices.DRIVERS`) and engages the policy
    with an opening command where `start` parks the rover (`handOver`: on the centre line;
    `drifted`: past the lane's edge, `choices.drift_of`, where the person takes over at once)."""
    drift = drift_of(start, seed)
    scenario = rollout_scenario(world, seed, FIELD, person)
    scenario.world.park(drift)
    opening = human_opening(world, seed, FIELD, person, drift)
    driver = SupervisedDriver(policy, scenario.human, opening, envelope)
    trace = run_controller(scenario.world, driver, seconds, on_frame=on_frame)
    metrics = rollout_metrics(trace, seed, start)
    return (
        with_own(metrics, TakeOvers(rollout_field(trace, driver.log, world))),
        trace,
        driver.log,
    )


def rollout_field(trace: RolloutTrace, log: SupervisionLog, world: str) -> FieldFigures:
    """The rollout's field figures as the next job will read them from its recording (the
    commands sent, windows of 100 ms: `driving_field_figures`), with the envelope's reasons
    for the take-overs (the log's; a take-over while the policy had sent nothing since the
    hand-back is the envelope's but not the recording's: it can count one more)."""
    ticks = np.arange(0.0, trace.seconds * 1000.0, TICK_MS)
    commands = [Command(c.t, c.type, c.values or {}, c.by) for c in trace.commands]
    figures = driving_field_figures(ticks, commands, WORLDS[world].roles)
    return replace(figures, reasons=log.reasons())


def record_supervised(
    session: FieldSession,
    world: str,
    seed: int,
    policy: SupervisedPolicy,
    seconds: float,
    envelope: Envelope,
    person: str = CONTINUOUS,
    start: str = HAND_OVER,
) -> SupervisedRollout:
    """`supervised_rollout`, written as the recording `session` (under a temporary name,
    renamed into place complete: a job never lists half a recording)."""
    from rovertrain.sim.recorder import H264, SessionFiles, VideoRecorder

    final = session.directory  # never overwritten: rename_no_replace refuses an existing one
    staging = final.with_name(f".{final.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        with VideoRecorder(staging / H264.file, H264, WIDTH, HEIGHT, RECORDED_FPS) as video:
            sink: FrameSink = lambda frame, _offset, _sent: video.add(frame)  # noqa: E731
            rollout = supervised_rollout(
                world, seed, policy, seconds, envelope, sink, person, start
            )
        metrics, trace, log = rollout
        commands: list[CommandLine] = [command.record() for command in trace.commands]
        profile = FIELD_PROFILES[person]
        files = SessionFiles(
            session.session_id, session.rover, profile, H264.file, 0.0, WORLDS[world].roles
        )
        files.write(staging, commands, driven_by={"model": session.model})
        for written in staging.iterdir():  # complete on disk before it is named
            with open(written, "rb") as handle:
                os.fsync(handle.fileno())
        rename_no_replace(staging, final)
        fsync_directory(final.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return metrics, trace, log


def field_report(
    world: str, request: SupervisedRequest
) -> ClosedLoopReport[TakeOvers, PooledTakeOvers, NoOwnFigures]:
    """Every seed driven under supervision (recorded where `request.record(seed)` names a
    session), pooled as the one controller `supervised`."""
    policy, seconds, envelope = request.policy, request.seconds, request.envelope
    person, start = request.driver, request.start
    rows = []
    for seed in request.seeds:
        session = request.record(seed)
        if session is None:
            result = supervised_rollout(world, seed, policy, seconds, envelope, None, person, start)
        else:
            result = record_supervised(
                session, world, seed, policy, seconds, envelope, person, start
            )
        rows.append(result[0])
        request.on_rollout(*result)
    return report_of(
        world, request.seeds, seconds, (SUPERVISED,), rows, TAKE_OVERS, driven=(start,)
    )


__all__ = [
    "FieldSession",
    "field_report",
    "field_session_id",
    "record_supervised",
    "supervised_rollout",
]
