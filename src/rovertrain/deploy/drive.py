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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.protocol.events import EventStream
from rovertrain.sim.rollout import BASELINES, FrameSink, RolloutMetrics, Trace, closed_loop_report
from rovertrain.sim.worlds import WORLDS


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
    if world not in WORLDS:
        raise RovertrainError(
            ErrorCode.USAGE, f"--world {world!r}: unknown; known: {', '.join(WORLDS)}."
        )
    policy, engine, identity = load_policy(checkpoint)
    controllers = ("policy", *BASELINES) if baselines else ("policy",)
    directory = Path(out).resolve() if out is not None else None
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    first_traces: list[Trace] = []
    video: Any = None

    def make_video(seed: int) -> FrameSink | None:
        nonlocal video
        if directory is None or seed != seeds[0]:
            return None
        from rovertrain.deploy.rollout_media import RolloutVideo

        video = RolloutVideo(directory / "rollout.mp4", dict(WORLDS[world].roles))
        return video  # type: ignore[no-any-return]

    def emit(metrics: RolloutMetrics, trace: Trace) -> None:
        if metrics.controller == "policy" and video is not None and metrics.seed == seeds[0]:
            video.close()
        if metrics.seed == seeds[0]:
            first_traces.append(trace)
        stream.emit("rollout", world=world, **metrics.event_fields())
        stop = metrics.stop_rate
        console_line(
            f"{metrics.controller:>8} seed {metrics.seed}: in lane {metrics.in_lane_fraction:6.1%}"
            f", |offset| {metrics.mean_abs_offset:.2f}, obstacles {metrics.obstacles_met} met "
            f"{metrics.stopped_before_contact} stopped {metrics.collided} hit"
            + ("" if stop is None else f" ({stop:.0%})")
            + f", {metrics.distance_m:.0f} m"
        )

    report = closed_loop_report(
        lambda: policy,
        world,
        seeds,
        seconds,
        controllers=controllers,
        on_rollout=emit,
        video=make_video,
    )
    files: dict[str, str] = {}
    if directory is not None:
        from rovertrain.deploy.rollout_media import draw_trajectories

        trajectory = directory / "trajectory.png"
        draw_trajectories(trajectory, first_traces, world, seeds[0])
        files = {"trajectory": str(trajectory)}
        if (directory / "rollout.mp4").is_file():
            files["rollout"] = str(directory / "rollout.mp4")
    elapsed = time.monotonic() - started
    simulated = seconds * len(seeds) * len(controllers)
    stream.emit(
        "drove",
        model={
            **identity,
            "engine": engine,
            "threshold": policy.threshold,
            "steeringDeadband": policy.steering_deadband,
        },
        files=files,
        elapsedSeconds=round(elapsed, 3),
        simulatedSeconds=round(simulated, 3),
        realtimeFactor=round(simulated / max(elapsed, 1e-9), 2),
        **report.summary_fields(),
    )
    policy_row = report.summaries["policy"]
    line = f"policy: in lane {policy_row.in_lane_fraction:.1%}"
    for name, gap in report.margins.items():
        line += f"; vs {name} {gap.in_lane_fraction:+.1%}"
        if gap.stop_rate is not None:
            line += f" (stops {gap.stop_rate:+.0%})"
    console_line(line)
    return ExitCode.COMPLETED
