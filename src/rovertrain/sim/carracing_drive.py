"""`rovertrain drive --world carracing`: a policy drives fresh CarRacing-v3 tracks, closed loop,
next to the scripted driver, the copycat and the blind policy (needs `rovertrain[sim]`).

The loop is the rover's: the environment steps at 50 fps and the car executes the last
`drive` command sent (as through the teleop page the recordings came from). The policy ticks
every 100 ms through `rovertrain.runtime` with the newest observation; what it sends
(`decision.send`) goes to the car and back into the policy with `observe_command`.

The starts (`sim.choices.STARTS`): handed over, the scripted driver drives the first
`HAND_OVER_MS` (the car is moving when the policy takes it, as an operator hands over; the
policy ticks in the shadow and observes those commands, then drives alone); from rest, the
policy drives the parked car from the first step; drifted, the same with the car parked on
the grass beside the track, its nose out (`carracing.park_drifted`). The copycat repeats the
hand-over's last command every keepalive. The scripted driver drives the whole rollout as the
baseline (from a drifted start, from there). Tracks are drawn from `--seed` values never used by
`synth --world carracing` (`fresh_track`), so the policy has not seen them.

Figures: the environment's own reward and tiles visited (`RaceFigures`, the world's own
figures: `RACE`), and the lane figures
of the other worlds: |offset| from the centre line in road half-widths, in lane while <= 1,
moving while faster than 1 unit/s, distance in world units.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rovertrain.sim.carracing import (
    FPS,
    SIZE,
    WORLD,
    car_pose,
    follower_for,
    make_env,
    park_drifted,
    state_of,
)
from rovertrain.sim.choices import CONTINUOUS, HAND_OVER, Drift, drift_of
from rovertrain.sim.drivers import Camera, Controller, SentCommand, TickPolicy
from rovertrain.sim.hand_over import Copycat, PolicyDriver, rollout_plan, start_named
from rovertrain.sim.race import RaceFigures, RaceMargin, RaceSummary, race_margin, race_summary
from rovertrain.sim.rollout import (
    BASELINES,
    ClosedLoopReport,
    FiguresKind,
    FrameSink,
    RolloutMetrics,
    back_in_lane_seconds,
    command_counts,
    lane_figures,
    report_of,
)
from rovertrain.sim.teleop import (
    DRIVE,
    KEEPALIVE_MS,
    LINKS,
    STANDSTILL,
    TRACK_HALF_WIDTH,
    CarPose,
    TrackFollower,
    Wish,
    car_action,
)

if TYPE_CHECKING:
    import gymnasium

STEP_MS = 1000.0 / FPS
MOVING_SPEED = 1.0  # world units per second
FRAMES_PER_TICK = 5  # environment steps per 100 ms
RACE: FiguresKind[RaceFigures, RaceSummary, RaceMargin] = FiguresKind(race_summary, race_margin)
RaceReport = ClosedLoopReport[RaceFigures, RaceSummary, RaceMargin]


def fresh_track(seed: int) -> int:
    """The track `drive` uses for world seed `seed`: a different hash input from
    `carracing.track_seed`, so no recorded track is driven."""
    digest = hashlib.sha256(f"{WORLD}:drive:{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class ScriptedDriver:
    """The privileged driver that recorded the data, through the same teleop page, without
    the lapses it has while recording (`teleop.Lapses`): the stricter reference."""

    name = "human"

    def __init__(self, follower: TrackFollower, driver: str = CONTINUOUS):
        self.follower, self.link = follower, LINKS[driver]()

    def act(self, t_ms: float, camera: Camera, pose: CarPose) -> list[SentCommand]:
        sent = self.link.offer(t_ms, self.follower.wish(pose))
        return [] if sent is None else [sent]


def showing(observation: np.ndarray) -> Camera:
    """The car's camera at a step: the environment's newest observation."""
    return lambda: observation


def executed_after(executed: Wish, sent: Sequence[SentCommand]) -> Wish:
    """What the car executes after `sent`: the last `drive` command's turn and throttle (a
    value the command does not carry is 0); any other command type leaves it as it was."""
    for command in sent:
        if command.type == DRIVE:
            values = command.values or {}
            executed = Wish(float(values.get("turn", 0.0)), float(values.get("throttle", 0.0)))
    return executed


@dataclass
class RaceTrace:
    """One rollout, one row per 20 ms step."""

    controller: str
    seconds: float
    offsets: list[float] = field(default_factory=list)  # road half-widths from the centre
    speeds: list[float] = field(default_factory=list)
    commands: list[SentCommand] = field(default_factory=list)
    reward: float = 0.0
    tiles_visited: int = 0
    track_tiles: int = 0
    ended: str = "time"

    @property
    def driven_seconds(self) -> float:
        """Simulated time until the rollout ended."""
        return len(self.speeds) * STEP_MS / 1000.0


def race(
    env: gymnasium.Env[np.ndarray, np.ndarray],
    track: int,
    make: Callable[[TrackFollower], Controller[CarPose]],
    seconds: float,
    on_frame: FrameSink | None = None,
    drift: Drift | None = None,
) -> RaceTrace:
    """One controller on track `track` for at most `seconds` (the episode may end first),
    the car parked where `drift` says (None: where the track puts it); `on_frame` gets the
    observation every 100 ms (a video)."""
    observation, _ = env.reset(seed=track)
    parked = 0.0  # the park step's reward (`park_drifted`)
    if drift is not None:
        observation, parked = park_drifted(env, drift)
    state = state_of(env)
    controller = make(follower_for(state))
    centre = follower_for(state)
    trace = RaceTrace(controller.name, seconds, track_tiles=len(state.track), reward=parked)
    executed = STANDSTILL
    filmed = 0  # trace.commands[filmed:]: sent since the previous frame
    for step in range(round(seconds * FPS)):
        pose = car_pose(state)
        offset = centre.distance_from_centre(pose) / TRACK_HALF_WIDTH
        if on_frame is not None and step % FRAMES_PER_TICK == 0:
            on_frame(observation, offset, trace.commands[filmed:])
            filmed = len(trace.commands)
        sent = controller.act(step * STEP_MS, showing(observation), pose)
        executed = executed_after(executed, sent)
        trace.commands.extend(sent)
        trace.offsets.append(offset)
        trace.speeds.append(pose.speed)
        observation, reward, terminated, truncated, info = env.step(
            np.asarray(car_action(executed), dtype=np.float32)
        )
        trace.reward += float(reward)
        if terminated:
            trace.ended = "lap" if info.get("lap_finished") else "off_playfield"
        if terminated or truncated:
            break
    trace.tiles_visited = int(state.tile_visited_count)
    return trace


def race_metrics(
    trace: RaceTrace, seed: int, start: str = HAND_OVER
) -> RolloutMetrics[RaceFigures]:
    """A rollout's figures (pure): the lane figures over the steps driven, the race's own."""
    offsets = np.asarray(trace.offsets, dtype=np.float64)
    in_lane, mean_offset, departure = lane_figures(offsets, STEP_MS)
    speeds = np.asarray(trace.speeds, dtype=np.float64)
    counts = command_counts(trace.commands)
    driven = trace.driven_seconds
    return RolloutMetrics(
        controller=trace.controller,
        seed=seed,
        seconds=trace.seconds,
        in_lane_fraction=in_lane,
        mean_abs_offset=mean_offset,
        first_departure_s=departure,
        back_in_lane_s=back_in_lane_seconds(offsets, STEP_MS),
        distance_m=float(speeds.sum() * STEP_MS / 1000.0),
        moving_fraction=float((speeds > MOVING_SPEED).mean()) if len(speeds) else 0.0,
        obstacles_met=0,
        stopped_before_contact=0,
        collided=0,
        passed=0,
        commands_per_second=len(trace.commands) / driven if driven else 0.0,
        command_counts=counts,
        bystanders_met=0,
        bystanders_warned=0,
        own=RaceFigures(trace.reward, trace.tiles_visited, trace.track_tiles, trace.ended),
        start=start,
    )


def controller_maker(
    name: str,
    policy_factory: Callable[[], TickPolicy] | None,
    driver: str = CONTINUOUS,
    start: str = HAND_OVER,
) -> Callable[[TrackFollower], Controller[CarPose]]:
    """The scripted driver (at the page of `driver`), or the copycat or a policy driver that
    takes the car at `start` (`choices.STARTS`: handed over by the scripted driver after
    `HAND_OVER_MS`, or from rest, drifted or not)."""

    def make(follower: TrackFollower) -> Controller[CarPose]:
        if name == "human":
            return ScriptedDriver(follower, driver)
        taken = start_named(start, ScriptedDriver(follower, driver))
        if name == "copycat":
            return Copycat(taken, KEEPALIVE_MS)
        if name in ("policy", "blind"):
            if policy_factory is None:
                raise ValueError(f"controller {name!r} needs a policy")
            blind = name == "blind"
            return PolicyDriver(policy_factory(), taken, blind, frame_size=(SIZE, SIZE))
        raise ValueError(f"unknown controller {name!r}")

    return make


def carracing_report(
    policy_factory: Callable[[], TickPolicy] | None,
    seeds: Sequence[int],
    seconds: float,
    *,
    controllers: Sequence[str] | None = None,
    on_rollout: Callable[[RolloutMetrics[RaceFigures], RaceTrace], None] | None = None,
    video: Callable[[int], FrameSink | None] | None = None,
    driver: str = CONTINUOUS,
    starts: Sequence[str] = (HAND_OVER,),
) -> RaceReport:
    """The policy and its baselines on the fresh tracks of `seeds` from every start (see the
    module docstring; the scripted driver drives each track once from rest, and once from a
    drifted start when one is asked). `video(seed)`
    may return a frame sink for the policy's first rollout on that seed."""
    if controllers is None:
        controllers = ("policy", *BASELINES) if policy_factory is not None else ("human", "copycat")
    env = make_env(round(seconds * FPS) + 1)
    rows: list[RolloutMetrics[RaceFigures]] = []
    try:
        for plan in rollout_plan(starts, controllers):
            make = controller_maker(plan.controller, policy_factory, driver, plan.start)
            filmed = video is not None and plan.first and plan.controller == "policy"
            for seed in seeds:
                sink = video(seed) if filmed and video is not None else None
                drift = drift_of(plan.start, seed)
                trace = race(env, fresh_track(seed), make, seconds, sink, drift)
                metrics = race_metrics(trace, seed, plan.start)
                rows.append(metrics)
                if on_rollout is not None:
                    on_rollout(metrics, trace)
    finally:
        env.close()
    return report_of(WORLD, seeds, seconds, controllers, rows, RACE, starts)
