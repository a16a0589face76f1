"""`rovertrain synth --world carracing`: Gymnasium's CarRacing-v3 driven by a scripted teleop
driver of our own, recorded as format-v1 sessions (needs `rovertrain[sim]`).

Each session is one track (`env.reset(seed=...)`, the seed derived from `--seed` and the
session index). The driver (`teleop.TrackFollower`) reads the track's centre line and the
car's pose and speed from the environment (privileged), and lapses now and then as a person
does (`teleop.Lapses`: the recordings show the car brought back); what it wishes goes through a teleop
page (`teleop.TeleopLink`: `drive {"turn", "throttle"}` past a deadband or as a 400 ms
keepalive) and the car executes the last command sent. The environment steps at 50 fps; every
96x96 RGB observation is a frame of an H.264 video (frame k at k x 20 ms, offsetMs 0) and the
commands are logged on the same clock. A session ends after `--minutes` or when the episode
ends (a lap completed, or the car left the playfield).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

import numpy as np

from rovertrain.contracts.errors import require_packages
from rovertrain.data.recording import CommandLine
from rovertrain.sim.choices import CONTINUOUS, KEYBOARD, Drift
from rovertrain.sim.recorder import (
    H264,
    SessionFiles,
    SessionTask,
    VideoRecorder,
    prefixed_session_ids,
    record_dataset,
)
from rovertrain.sim.teleop import (
    LINKS,
    TRACK_HALF_WIDTH,
    CarPose,
    Lapses,
    TrackFollower,
    car_action,
)
from rovertrain.sim.world_protocol import SynthRequest

if TYPE_CHECKING:
    import gymnasium

WORLD = "carracing"
ENV_ID = "CarRacing-v3"
FPS = 50
SIZE = 96  # CarRacing's observation: 96x96 RGB
ROVER_ID = "carracing"
PROFILES = {CONTINUOUS: "scripted-teleop", KEYBOARD: "scripted-keyboard"}
ROLES = {"drive": "movement"}


class _Vector(Protocol):
    def __getitem__(self, index: int) -> float: ...


class _Hull(Protocol):
    position: _Vector
    angle: float
    linearVelocity: _Vector


class _Car(Protocol):
    hull: _Hull


class CarRacingState(Protocol):
    """What the scripted driver and the checks read of `env.unwrapped` (privileged)."""

    track: Sequence[tuple[float, float, float, float]]  # (alpha, beta, x, y) per waypoint
    car: _Car
    tile_visited_count: int


class DrivenSession(TypedDict):
    """One CarRacing recording (an entry of the `synthesized` event)."""

    sessionId: str
    frames: int
    commands: int
    fps: int
    world: str
    codec: str
    trackSeed: int
    trackTiles: int
    tilesVisited: int
    reward: float
    ended: str  # "time", "lap" or "off_playfield"


class EpisodeResult(TypedDict):
    commands: list[CommandLine]
    frames: int
    trackTiles: int
    tilesVisited: int
    reward: float
    ended: str


def require_sim_packages() -> None:
    """Gymnasium with Box2D (`rovertrain[sim]`), or a `missing_dependency` error that says so."""
    require_packages(("gymnasium", "Box2D", "pygame"), f"synth --world {WORLD}", "sim")


def make_env(max_steps: int) -> gymnasium.Env[np.ndarray, np.ndarray]:
    """CarRacing-v3 with continuous actions, its time limit set to `max_steps`."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    require_sim_packages()
    import gymnasium

    return gymnasium.make(ENV_ID, continuous=True, max_episode_steps=max_steps)


def state_of(env: gymnasium.Env[np.ndarray, np.ndarray]) -> CarRacingState:
    return cast(CarRacingState, env.unwrapped)


def car_pose(state: CarRacingState) -> CarPose:
    hull = state.car.hull
    velocity = hull.linearVelocity
    return CarPose(
        float(hull.position[0]),
        float(hull.position[1]),
        float(hull.angle),
        math.hypot(float(velocity[0]), float(velocity[1])),
    )


def park_drifted(
    env: gymnasium.Env[np.ndarray, np.ndarray], drift: Drift
) -> tuple[np.ndarray, float]:
    """The car rebuilt, parked, where a drifted start leaves it (`choices.Drift`): across the
    track's first waypoint, `drift.offset` road half-widths from the centre line (on the
    grass), its nose `drift.heading` further out. Returns the camera's picture after one
    standstill step (the reset's shows the car where the track put it) and that step's
    reward: the reset's credit for the tiles under the track's start comes with it, as it
    comes with the first step of a car that was not parked."""
    from gymnasium.envs.box2d.car_dynamics import Car

    unwrapped = cast(Any, env.unwrapped)
    _, direction, x, y = unwrapped.track[0]
    # The track's lateral (its edges are the centre plus or minus the half-width along it) is
    # (cos, sin) of the waypoint's direction; a car's nose turns toward it as its angle falls.
    across = drift.offset * TRACK_HALF_WIDTH
    unwrapped.car.destroy()
    unwrapped.car = Car(  # type: ignore[no-untyped-call]
        unwrapped.world,
        direction - drift.heading,
        x + across * math.cos(direction),
        y + across * math.sin(direction),
    )
    observation, reward, *_ = env.step(np.zeros(3, dtype=np.float32))
    return observation, float(reward)


def follower_for(state: CarRacingState) -> TrackFollower:
    return TrackFollower([(float(point[2]), float(point[3])) for point in state.track])


def track_seed(seed: int, index: int) -> int:
    """The track of session `index` of a data set made with `seed`."""
    digest = hashlib.sha256(f"{WORLD}:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def drive_episode(
    env: gymnasium.Env[np.ndarray, np.ndarray],
    seed: int,
    steps: int,
    on_frame: Callable[[np.ndarray], None],
    driver: str = CONTINUOUS,
) -> EpisodeResult:
    """The scripted teleop driver drives track `seed` for at most `steps` steps; `on_frame`
    gets every observation (the reset one first); returns the command log and the outcome. The
    driver lapses now and then (`teleop.Lapses`), as a person does, and sends through the
    page of `driver` (`teleop.LINKS`)."""
    observation, _ = env.reset(seed=seed)
    state = state_of(env)
    follower, link, lapses = follower_for(state), LINKS[driver](), Lapses(seed)
    on_frame(observation)
    commands: list[CommandLine] = []
    frames, reward, ended = 1, 0.0, "time"
    for step in range(steps):
        t_ms = step * 1000.0 / FPS
        sent = link.offer(t_ms, lapses.wish(t_ms, 1000.0 / FPS, follower, car_pose(state)))
        if sent is not None:
            commands.append(sent.record())
        action = np.asarray(car_action(link.executed), dtype=np.float32)
        observation, step_reward, terminated, truncated, info = env.step(action)
        on_frame(observation)
        frames += 1
        reward += float(step_reward)
        if terminated:
            ended = "lap" if info.get("lap_finished") else "off_playfield"
        if terminated or truncated:
            break
    return {
        "commands": commands,
        "frames": frames,
        "trackTiles": len(state.track),
        "tilesVisited": int(state.tile_visited_count),
        "reward": round(reward, 2),
        "ended": ended,
    }


def record_episode(video_path: Path, seed: int, steps: int, driver: str) -> EpisodeResult:
    """Drive track `seed` and write its observations as an H.264 MP4 at 50 fps."""
    env = make_env(steps)
    try:
        with VideoRecorder(video_path, H264, SIZE, SIZE, FPS) as recorder:
            return drive_episode(env, seed, steps, recorder.add, driver)
    finally:
        env.close()


def write_session(task: SessionTask, driver: str = CONTINUOUS) -> DrivenSession:
    """Session `task`: the scripted driver on its track, recorded."""
    session_id, directory = task.session_id, task.directory
    directory.mkdir(parents=True, exist_ok=True)
    track = track_seed(task.seed, task.index)
    steps = max(1, round(task.minutes * 60 * FPS))
    result = record_episode(directory / H264.file, track, steps, driver)
    SessionFiles(session_id, ROVER_ID, PROFILES[driver], H264.file, 0, ROLES).write(
        directory, result["commands"]
    )
    return {
        "sessionId": session_id,
        "frames": result["frames"],
        "commands": len(result["commands"]),
        "fps": FPS,
        "world": WORLD,
        "codec": H264.codec,
        "trackSeed": track,
        "trackTiles": result["trackTiles"],
        "tilesVisited": result["tilesVisited"],
        "reward": result["reward"],
        "ended": result["ended"],
    }


def write_dataset(request: SynthRequest, workers: int = 2) -> dict[str, object]:
    """The request's CarRacing recordings under OUT/recordings and a ready OUT/job.json; the
    `synthesized` event's fields."""
    require_sim_packages()
    ids = prefixed_session_ids(request.sessions, request.seed, WORLD)
    write = functools.partial(write_session, driver=request.driver)
    recorded = record_dataset(request.out, ids, request.seed, request.minutes, write, workers)
    return recorded.synthesized(WORLD, request.driver)
