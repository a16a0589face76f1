"""`rovertrain drive`: the policy drives the simulated rover, closed loop, next to baselines.

The policy runs through the rover runtime (`RoverPolicy`: the same `prepare_frame` and
`StateTracker` as training; onnxruntime for an exported folder, torch for a checkpoint
folder), ticked every 100 ms with the camera frame; its own commands are fed back with
`observe_command`. On the same world seeds: the human driver model, the copycat (repeats its
last command) and the policy with grey frames (blind). One `rollout` event per controller and
seed, then `drove` with the summaries and the policy's margin over each baseline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rovertrain.contracts.command_schema import Slot
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.deploy.tick_log import TICKS_FILE, DecisionLog, tick_rows, write_ticks
from rovertrain.protocol.events import EventStream
from rovertrain.sim.carracing import WORLD as CARRACING
from rovertrain.sim.carracing_drive import DEFAULT_SECONDS as CARRACING_SECONDS
from rovertrain.sim.carracing_drive import HAND_OVER_MS
from rovertrain.sim.drivers import TickPolicy
from rovertrain.sim.race import RaceFigures
from rovertrain.sim.rollout import (
    BASELINES,
    ClosedLoopReport,
    FrameSink,
    RolloutMetrics,
    RolloutTrace,
    closed_loop_report,
)
from rovertrain.sim.worlds import WORLDS, rollout_scenario


def default_seconds(world: str) -> float:
    """A rollout's length unless --seconds says: 2 minutes; on CarRacing 30 s (a lap of the
    scripted driver takes 21-26 s, and a completed lap ends the episode)."""
    return CARRACING_SECONDS if world == CARRACING else 120.0


if TYPE_CHECKING:
    from rovertrain.deploy.mp4_writer import Mp4Writer
    from rovertrain.deploy.rollout_media import RolloutVideo


class DriveMedia:
    """--out: the policy's rollout on the first seed as rollout.mp4 and tick by tick as
    ticks.ndjson (`deploy.tick_log`), and every controller's path on the first seed as
    trajectory.png."""

    def __init__(
        self,
        directory: Path | None,
        world: str,
        first_seed: int,
        log: DecisionLog | None = None,
    ):
        self.directory, self.world, self.first_seed = directory, world, first_seed
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self.video: RolloutVideo | None = None
        self.first_traces: list[RolloutTrace] = []
        self.log = log

    def video_for(self, seed: int) -> FrameSink | None:
        """The frame sink of the policy's rollout on `seed` (only the first seed is filmed)."""
        if self.directory is None or seed != self.first_seed:
            return None
        from rovertrain.deploy.rollout_media import RolloutVideo

        self.video = RolloutVideo(self.directory / "rollout.mp4", dict(WORLDS[self.world].roles))
        return self.video

    def rollout_done(self, metrics: RolloutMetrics, trace: RolloutTrace) -> None:
        if metrics.seed != self.first_seed:
            return
        if metrics.controller == "policy" and self.video is not None:
            self.video.close()
        if metrics.controller == "policy" and self.log is not None and self.directory:
            track = rollout_scenario(self.world, metrics.seed).world.track
            rows = tick_rows(self.log.decisions, trace, track.curvature)
            write_ticks(self.directory / TICKS_FILE, rows)
        self.first_traces.append(trace)

    def files(self) -> dict[str, str]:
        """Draws trajectory.png; the `files` field of `drove`."""
        if self.directory is None:
            return {}
        from rovertrain.deploy.rollout_media import draw_trajectories

        trajectory = self.directory / "trajectory.png"
        draw_trajectories(trajectory, self.first_traces, self.world, self.first_seed)
        files = {"trajectory": str(trajectory)}
        if (self.directory / "rollout.mp4").is_file():
            files["rollout"] = str(self.directory / "rollout.mp4")
        if (self.directory / TICKS_FILE).is_file():
            files["ticks"] = str(self.directory / TICKS_FILE)
        return files


class RaceVideo:
    """--out on CarRacing: the policy's rollout on the first track as rollout.mp4, the
    observation every 100 ms, 4 times its size (no trajectory picture)."""

    SCALE = 4

    def __init__(self, directory: Path | None, first_seed: int):
        self.directory, self.first_seed = directory, first_seed
        self.writer: Mp4Writer | None = None

    def for_seed(self, seed: int) -> Callable[[np.ndarray], None] | None:
        if self.directory is None or seed != self.first_seed:
            return None
        from rovertrain.deploy.mp4_writer import Mp4Writer

        writer = self.writer = Mp4Writer(self.directory / "rollout.mp4", 100)
        return lambda frame: writer.add(frame.repeat(self.SCALE, 0).repeat(self.SCALE, 1))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def files(self) -> dict[str, str]:
        return {"rollout": str(self.writer.path)} if self.writer is not None else {}


def check_carracing(schema: Sequence[Slot], seconds: float) -> None:
    """A policy that can drive the car (a movement-role `drive` with `turn` and `throttle`, as
    `synth --world carracing` records), for longer than the hand-over."""
    drive = next((slot for slot in schema if slot["type"] == "drive"), None)
    if (
        drive is None
        or drive["role"] != "movement"
        or not {"turn", "throttle"} <= set(drive["values"])
    ):
        raise RovertrainError(
            ErrorCode.USAGE,
            "--world carracing drives the car with drive {turn, throttle}; this policy's "
            f"schema has {[(slot['type'], list(slot['values'])) for slot in schema]}.",
        )
    if seconds * 1000 <= HAND_OVER_MS:
        raise RovertrainError(
            ErrorCode.USAGE,
            f"--seconds {seconds:g}: on carracing the scripted driver has the car for the first "
            f"{HAND_OVER_MS / 1000:g} s; give more.",
        )


def rollout_line(metrics: RolloutMetrics) -> str:
    """One rollout in words (stderr)."""
    stop = metrics.stop_rate
    return (
        f"{metrics.controller:>8} seed {metrics.seed}: in lane {metrics.in_lane_fraction:6.1%}"
        f", |offset| {metrics.mean_abs_offset:.2f}, obstacles {metrics.obstacles_met} met "
        f"{metrics.stopped_before_contact} stopped {metrics.collided} hit"
        + ("" if stop is None else f" ({stop:.0%})")
        + f", {metrics.distance_m:.0f} m"
        + race_words(metrics.race)
    )


def race_words(race: RaceFigures | None) -> str:
    if race is None:
        return ""
    return (
        f", reward {race.reward:.0f}, tiles {race.tiles_visited}/{race.track_tiles} "
        f"({race.tile_fraction:.0%}), ended: {race.ended}"
    )


def margins_line(report: ClosedLoopReport) -> str:
    """The policy against each baseline in words (stderr)."""
    line = f"policy: in lane {report.summaries['policy'].in_lane_fraction:.1%}"
    race = report.summaries["policy"].race
    if race is not None:
        line += f", reward {race.reward:.0f} ({race.tile_fraction:.0%} of the tiles)"
    for name, gap in report.margins.items():
        line += f"; vs {name} {gap.in_lane_fraction:+.1%}"
        if gap.race is not None and gap.race.reward_ratio is not None:
            line += f" (reward x{gap.race.reward_ratio:.2f})"
        if gap.stop_rate is not None:
            line += f" (stops {gap.stop_rate:+.0%})"
    return line


def race_report(
    policy: TickPolicy,
    seeds: Sequence[int],
    seconds: float,
    controllers: Sequence[str],
    on_rollout: Callable[[RolloutMetrics], None],
    video: RaceVideo,
) -> tuple[ClosedLoopReport, float]:
    """CarRacing's rollouts (`sim.carracing_drive`) and the simulated seconds actually driven
    (an episode may end before `seconds`: a lap, or the car off the playfield)."""
    from rovertrain.sim.carracing_drive import RaceTrace, carracing_report

    driven: list[float] = []

    def on_race(metrics: RolloutMetrics, trace: RaceTrace) -> None:
        driven.append(trace.driven_seconds)
        on_rollout(metrics)

    try:
        report = carracing_report(
            lambda: policy,
            seeds,
            seconds,
            controllers=controllers,
            on_rollout=on_race,
            video=video.for_seed,
        )
    finally:
        video.close()
    return report, sum(driven)


def drive_policy(
    checkpoint: str,
    world: str,
    seconds: float,
    seeds: Sequence[int],
    out: str | None,
    baselines: bool,
    stream: EventStream,
) -> int:
    from rovertrain.deploy.replay import load_policy
    from rovertrain.protocol.console import console_line

    started = time.monotonic()

    # 1. The world and the policy (and which baselines drive next to it).
    if world not in (*WORLDS, CARRACING):
        known = ", ".join((*WORLDS, CARRACING))
        raise RovertrainError(ErrorCode.USAGE, f"--world {world!r}: unknown; known: {known}.")
    if world == CARRACING:
        from rovertrain.sim.carracing import require_sim_packages

        require_sim_packages()
    loaded = load_policy(checkpoint)
    if world == CARRACING:
        check_carracing(loaded.policy.schema, seconds)
    controllers = ("policy", *BASELINES) if baselines else ("policy",)
    directory = Path(out).resolve() if out is not None else None
    # --out on the rover worlds: the policy's first rollout tick by tick as well.
    log = DecisionLog(loaded.policy) if directory is not None and world != CARRACING else None
    media = DriveMedia(directory, world, seeds[0], log)
    race_video = RaceVideo(media.directory, seeds[0])

    # 2. Every controller on every seed: a `rollout` event and a line on stderr each.
    def on_rollout(metrics: RolloutMetrics, trace: RolloutTrace | None = None) -> None:
        if trace is not None:
            media.rollout_done(metrics, trace)
        stream.emit("rollout", world=world, **metrics.event_fields())
        console_line(rollout_line(metrics))

    simulated = seconds * len(seeds) * len(controllers)
    if world == CARRACING:
        report, simulated = race_report(
            loaded.policy, seeds, seconds, controllers, on_rollout, race_video
        )
    else:
        report = closed_loop_report(
            lambda: log if log is not None else loaded.policy,
            world,
            seeds,
            seconds,
            controllers=controllers,
            on_rollout=on_rollout,
            video=media.video_for,
        )

    # 3. The pictures, then the `drove` summary.
    files = media.files() if world != CARRACING else race_video.files()
    elapsed = time.monotonic() - started
    stream.emit(
        "drove",
        model=loaded.model_fields(),
        files=files,
        elapsedSeconds=round(elapsed, 3),
        simulatedSeconds=round(simulated, 3),
        realtimeFactor=round(simulated / max(elapsed, 1e-9), 2),
        **report.summary_fields(),
    )
    console_line(margins_line(report))
    return ExitCode.COMPLETED
