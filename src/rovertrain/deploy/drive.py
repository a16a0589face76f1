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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.deploy.tick_log import TICKS_FILE, DecisionLog, tick_rows, write_ticks
from rovertrain.protocol.events import EventStream
from rovertrain.sim.hand_over import reference_start
from rovertrain.sim.registry import lookup
from rovertrain.sim.rollout import (
    BASELINES,
    AnyReport,
    AnyRollout,
    FrameSink,
    RolloutTrace,
    back_in_lane_words,
)
from rovertrain.sim.world_protocol import DriveRequest

if TYPE_CHECKING:
    from rovertrain.deploy.rollout_media import RolloutVideo


class DriveMedia:
    """--out (`sim.world_protocol.Film`): the policy's rollout on the first seed as
    rollout.mp4 and, on a world with a lane path, tick by tick as ticks.ndjson
    (`deploy.tick_log`) and every controller's path on the first seed as trajectory.png."""

    def __init__(
        self,
        directory: Path | None,
        world: str,
        first_seed: int,
        filmed_start: str,
        log: DecisionLog | None = None,
    ):
        self.directory, self.world, self.first_seed = directory, world, first_seed
        self.filmed_start = filmed_start  # the first start's rollouts (`drive`'s first)
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self.video_sink: RolloutVideo | None = None
        self.first_traces: list[RolloutTrace] = []
        self.log = log

    def video(self, seed: int, roles: Mapping[str, str], scale: int) -> FrameSink | None:
        """The frame sink of the policy's rollout on `seed` (only the first seed is filmed)."""
        if self.directory is None or seed != self.first_seed:
            return None
        from rovertrain.deploy.rollout_media import RolloutVideo

        self.video_sink = RolloutVideo(self.directory / "rollout.mp4", roles, scale)
        return self.video_sink

    def rollout_done(self, metrics: AnyRollout, trace: RolloutTrace) -> None:
        """Keeps the first seed's rollouts from the first start, and the human's reference
        for it."""
        taken = reference_start(self.filmed_start) if metrics.controller == "human" else None
        filmed = metrics.start in (self.filmed_start, taken)
        if metrics.seed != self.first_seed or not filmed:
            return
        if metrics.controller == "policy":
            self.close()
            if self.log is not None and self.directory and trace.curvature is not None:
                rows = tick_rows(self.log.decisions, trace, trace.curvature)
                write_ticks(self.directory / TICKS_FILE, rows)
        self.first_traces.append(trace)

    def close(self) -> None:
        if self.video_sink is not None:
            self.video_sink.close()
            self.video_sink = None

    def files(self) -> dict[str, str]:
        """Draws trajectory.png (where paths were driven); the `files` field of `drove`."""
        self.close()
        if self.directory is None:
            return {}
        files = {}
        if self.first_traces:
            from rovertrain.deploy.rollout_media import draw_trajectories

            trajectory = self.directory / "trajectory.png"
            draw_trajectories(trajectory, self.first_traces, self.world, self.first_seed)
            files["trajectory"] = str(trajectory)
        if (self.directory / "rollout.mp4").is_file():
            files["rollout"] = str(self.directory / "rollout.mp4")
        if (self.directory / TICKS_FILE).is_file():
            files["ticks"] = str(self.directory / TICKS_FILE)
        return files


def rollout_line(metrics: AnyRollout) -> str:
    """One rollout in words (stderr)."""
    stop = metrics.stop_rate
    return (
        f"{metrics.controller:>8} seed {metrics.seed} {metrics.start:>8}: in lane {metrics.in_lane_fraction:6.1%}"
        f", |offset| {metrics.mean_abs_offset:.2f}, obstacles {metrics.obstacles_met} met "
        f"{metrics.stopped_before_contact} stopped {metrics.collided} hit"
        + ("" if stop is None else f" ({stop:.0%})")
        + ("" if (median := metrics.median_stop_distance) is None else f" at {median:.1f} m")
        + f", {metrics.distance_m:.0f} m"
        + back_in_lane_words(metrics.back_in_lane_s)
        + metrics.own.words()
    )


def margins_line(report: AnyReport) -> str:
    """The policy against each baseline in words (stderr), a line per start."""
    lines = []
    for start, figures in report.starts.items():
        policy = figures.summaries["policy"]
        line = f"policy ({start}): in lane {policy.in_lane_fraction:.1%}" + policy.own.words()
        for name, gap in figures.margins.items():
            line += f"; vs {name} {gap.in_lane_fraction:+.1%}" + gap.own.words()
            if gap.stop_rate is not None:
                line += f" (stops {gap.stop_rate:+.0%})"
        lines.append(line)
    return "\n".join(lines)


def drive_policy(
    checkpoint: str,
    world: str,
    seconds: float,
    seeds: Sequence[int],
    out: str | None,
    baselines: bool,
    driver: str,
    starts: Sequence[str],
    stream: EventStream,
) -> int:
    from rovertrain.deploy.replay import load_policy
    from rovertrain.protocol.console import console_line

    started = time.monotonic()

    # 1. The world and the policy (and which baselines drive next to it).
    simulated_world = lookup(world)
    simulated_world.require_packages()
    loaded = load_policy(checkpoint)
    simulated_world.check_policy(loaded.policy.schema, seconds)
    controllers = ("policy", *BASELINES) if baselines else ("policy",)
    directory = Path(out).resolve() if out is not None else None
    # --out: the policy's first rollout tick by tick as well.
    log = DecisionLog(loaded.policy) if directory is not None else None
    media = DriveMedia(directory, world, seeds[0], starts[0], log)

    # 2. Every controller on every seed: a `rollout` event and a line on stderr each.
    def on_rollout(metrics: AnyRollout) -> None:
        stream.emit("rollout", world=world, **metrics.event_fields())
        console_line(rollout_line(metrics))

    request = DriveRequest(
        log if log is not None else loaded.policy,
        seeds,
        seconds,
        controllers,
        on_rollout,
        driver,
        tuple(starts),
    )
    try:
        outcome = simulated_world.drive(request, media)
    finally:
        media.close()
    report, simulated = outcome.report, outcome.simulated_seconds

    # 3. The pictures, then the `drove` summary.
    files = media.files()
    elapsed = time.monotonic() - started
    stream.emit(
        "drove",
        driver=driver,
        model=loaded.model_fields(),
        files=files,
        elapsedSeconds=round(elapsed, 3),
        simulatedSeconds=round(simulated, 3),
        realtimeFactor=round(simulated / max(elapsed, 1e-9), 2),
        **report.summary_fields(),
    )
    console_line(margins_line(report))
    return ExitCode.COMPLETED
