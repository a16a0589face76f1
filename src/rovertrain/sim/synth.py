"""Synthetic driving recordings: the human driver model driving a simulated world, recorded
as a browser teleop page would (video + command log + session.json).

The worlds, the driver and the physics live in `worlds`, `drivers` and `world`; this module
only records: frames at the session's frame rate with a per-session capture offset, encoded
like the world's recorder does (road: VP8 WebM like a browser's MediaRecorder; warehouse:
H.264 MP4 or VP9 WebM, chosen per session), and the commands the driver sent.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import NotRequired, TypedDict

import numpy as np

from rovertrain.data.recording import CommandLine
from rovertrain.sim.choices import CONTINUOUS
from rovertrain.sim.drivers import KEYBOARD_PAGE
from rovertrain.sim.recorder import (
    SessionFiles,
    SessionTask,
    VideoRecorder,
    prefixed_session_ids,
    record_dataset,
)
from rovertrain.sim.render import HEIGHT, WIDTH
from rovertrain.sim.rollout import run_controller
from rovertrain.sim.world import World
from rovertrain.sim.world_protocol import SynthRequest
from rovertrain.sim.worlds import WORLDS, Scenario, build

ROVERS = ("rover-ash", "rover-birch", "rover-cedar")
PROFILES = ("gamepad", "keyboard")
DEFAULT_WORLD = "road"


class WrittenSession(TypedDict):
    """One recording `write_session` wrote (an entry of the `synthesized` event)."""

    sessionId: str
    frames: int
    commands: int
    fps: int
    world: NotRequired[str]
    codec: NotRequired[str]


def simulate_session(
    scenario: Scenario,
    seconds: float,
    offset_ms: float,
    fps: int,
    on_frame: Callable[[np.ndarray], None],
) -> list[CommandLine]:
    """The human driver drives `scenario` for `seconds`; `on_frame` gets every camera frame
    (one every 1000/fps ms from offset_ms); returns the command log."""
    frame_interval = 1000.0 / fps
    next_frame = offset_ms

    def camera(world: World) -> None:
        nonlocal next_frame
        while next_frame <= world.t_ms:
            on_frame(world.render())
            next_frame += frame_interval

    trace = run_controller(scenario.world, scenario.human, seconds, after_move=camera)
    return [command.record() for command in trace.commands]


def shuffle_times(commands: list[CommandLine], rng: random.Random, end_ms: float) -> None:
    """Scramble commands over time: labels become unrelated to the image and to each other."""
    times = sorted(round(rng.uniform(0, end_ms), 1) for _ in commands)
    rng.shuffle(commands)
    for item, t in zip(commands, times, strict=True):
        item["t"] = t
    commands.sort(key=lambda item: item["t"])


def session_profile(driver: str, index: int) -> str:
    """How session `index` is driven: the continuous driver alternates a gamepad and arrow keys
    that change the turn in half steps only on a clear need (the recordings every measurement
    before the keyboard driver was made with); the keyboard driver is a keyboard page."""
    return PROFILES[index % len(PROFILES)] if driver == CONTINUOUS else KEYBOARD_PAGE


def write_session(
    task: SessionTask, shuffle: bool, world: str = DEFAULT_WORLD, driver: str = CONTINUOUS
) -> WrittenSession:
    """Session `task` of `world`: the human driver model's drive, recorded."""
    session_id, index, minutes = task.session_id, task.index, task.minutes
    rng = random.Random(f"{task.seed}:{session_id}")
    recording = WORLDS[world].recording(rng)  # first, in the original order: same seed, same data
    fps, offset_ms, video = recording.fps, recording.offset_ms, recording.video
    profile = session_profile(driver, index)
    rover = ROVERS[index % len(ROVERS)]
    directory = task.directory
    directory.mkdir(parents=True, exist_ok=True)
    scenario = build(world, rng, profile, rng.randrange(2**32))
    with VideoRecorder(directory / video.file, video, WIDTH, HEIGHT, fps) as recorder:
        commands = simulate_session(scenario, minutes * 60, offset_ms, fps, recorder.add)
    if shuffle:
        shuffle_times(commands, rng, minutes * 60_000)
    session = SessionFiles(session_id, rover, profile, video.file, offset_ms, scenario.kind.roles)
    session.write(directory, commands)
    result: WrittenSession = {
        "sessionId": session_id,
        "frames": recorder.frames,
        "commands": len(commands),
        "fps": fps,
    }
    if world != DEFAULT_WORLD:
        result["world"] = world
        result["codec"] = video.codec
    return result


def session_ids(count: int, seed: int, world: str = DEFAULT_WORLD) -> list[str]:
    """Deterministic ids with max(2, count // 5) held out when count allows it."""
    return prefixed_session_ids(count, seed, WORLDS[world].session_prefix)


def write_dataset(
    request: SynthRequest, world: str = DEFAULT_WORLD, workers: int = 2
) -> dict[str, object]:
    """The request's recordings of `world` under OUT/recordings and a ready OUT/job.json;
    the `synthesized` event's fields."""
    if world not in WORLDS:
        raise ValueError(f"unknown world {world!r}; known: {', '.join(WORLDS)}")
    ids = session_ids(request.sessions, request.seed, world)
    write = functools.partial(
        write_session, shuffle=request.shuffle_commands, world=world, driver=request.driver
    )
    recorded = record_dataset(request.out, ids, request.seed, request.minutes, write, workers)
    return recorded.synthesized(None if world == DEFAULT_WORLD else world, request.driver)
