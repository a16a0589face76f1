"""Synthetic driving recordings: the human driver model driving a simulated world, recorded
as a browser teleop page would (video + command log + session.json).

The worlds, the driver and the physics live in `worlds`, `drivers` and `world`; this module
only records: frames at the session's frame rate with a per-session capture offset, encoded
like the world's recorder does (road: VP8 WebM like a browser's MediaRecorder; warehouse:
H.264 MP4 or VP9 WebM, chosen per session), and the commands the driver sent.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NotRequired, TypedDict, TypeVar

import numpy as np

from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.partition import is_held_out
from rovertrain.data.recording import FORMAT, CommandLine
from rovertrain.sim.render import HEIGHT, WIDTH
from rovertrain.sim.rollout import run_controller
from rovertrain.sim.world import World
from rovertrain.sim.worlds import WORLDS, Scenario, build
from rovertrain.store.layout import Layout

ROVERS = ("rover-ash", "rover-birch", "rover-cedar")
PROFILES = ("gamepad", "keyboard")
DEFAULT_WORLD = "road"
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class VideoFormat:
    container: str  # PyAV format name
    codec: str
    file: str
    options: dict[str, str]


# libvpx's realtime deadline adapts its choices to the CPU time it gets, so a busy machine
# encodes a different picture; "good" at cpu-used 5 is as fast here and deterministic.
VP8 = VideoFormat("webm", "libvpx", "camera.webm", {"deadline": "good", "cpu-used": "5"})
VP9 = VideoFormat(
    "webm", "libvpx-vp9", "camera.webm", {"deadline": "realtime", "cpu-used": "8", "row-mt": "0"}
)
H264 = VideoFormat("mp4", "libx264", "camera.mp4", {"preset": "ultrafast", "tune": "zerolatency"})


class VideoRecorder:
    """A video written one RGB picture at a time as a recorder would (`video`'s codec and
    options, 600 kb/s, one encoder thread), under a temporary name, renamed into place only
    when it is complete. `frames`: the pictures added."""

    def __init__(self, path: Path, video: VideoFormat, width: int, height: int, fps: int):
        self.path, self.video, self.size, self.fps = path, video, (width, height), fps
        self.temporary = path.with_name(f".{path.name}.tmp")
        self.frames = 0

    def __enter__(self) -> VideoRecorder:
        import av

        self.container = av.open(str(self.temporary), mode="w", format=self.video.container)
        stream = self.container.add_stream(self.video.codec, rate=self.fps)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height = self.size
        stream.pix_fmt = "yuv420p"
        stream.bit_rate = 600_000
        stream.codec_context.options = dict(self.video.options)
        stream.codec_context.thread_count = 1
        self.stream = stream
        return self

    def add(self, image: np.ndarray) -> None:
        import av

        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
        frame.pts, frame.time_base = self.frames, Fraction(1, self.fps)
        self.frames += 1
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def __exit__(self, error: type[BaseException] | None, *_: object) -> None:
        try:
            if error is None:
                for packet in self.stream.encode():
                    self.container.mux(packet)
        finally:
            self.container.close()
        if error is None:
            os.replace(self.temporary, self.path)


@dataclass(frozen=True)
class SessionFiles:
    """session.json and the command log of a simulated recording (format v1)."""

    session_id: str
    rover: str
    profile: str
    video_file: str
    offset_ms: float
    roles: Mapping[str, str]

    def write(
        self,
        directory: Path,
        commands: Sequence[CommandLine],
        driven_by: Mapping[str, str] | None = None,
    ) -> None:
        """`driven_by`: the model that drove under supervision (session.json `drivenBy`)."""
        with open(directory / "commands.ndjson", "w") as log:
            for item in commands:
                log.write(json.dumps(item) + "\n")
        meta = {
            "format": FORMAT,
            "sessionId": self.session_id,
            "roverId": self.rover,
            "controlProfile": self.profile,
            "startedAt": "2026-11-01T12:00:00Z",
            "video": {"file": self.video_file, "offsetMs": self.offset_ms},
            "commands": {"file": "commands.ndjson"},
            "commandRoles": dict(self.roles),
        }
        if driven_by is not None:
            meta["drivenBy"] = dict(driven_by)
        (directory / "session.json").write_text(json.dumps(meta, indent=2) + "\n")


def each_session(write: Callable[[T], R], tasks: list[T], workers: int) -> list[R]:
    """`write` over the sessions' tasks, on `workers` processes when there is more than one."""
    import multiprocessing

    if workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
            return pool.map(write, tasks)
    return [write(task) for task in tasks]


def write_job(root: Path, sessions: list[str], seed: int) -> Path:
    """ROOT/job.json, the data set's ready job (`default_job`)."""
    job_path = root / "job.json"
    job_path.write_text(json.dumps(default_job(root, sessions, seed), indent=2) + "\n")
    return job_path


class WrittenSession(TypedDict):
    """One recording `write_session` wrote (an entry of the `synthesized` event)."""

    sessionId: str
    frames: int
    commands: int
    fps: int
    world: NotRequired[str]
    codec: NotRequired[str]


class WrittenDataset(TypedDict):
    """What `write_dataset` wrote: the `synthesized` event's fields."""

    root: str
    job: str
    sessions: list[WrittenSession]
    heldOut: list[str]
    world: NotRequired[str]


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


def write_session(
    root: Path,
    session_id: str,
    index: int,
    seed: int,
    minutes: float,
    shuffle: bool,
    world: str = DEFAULT_WORLD,
) -> WrittenSession:
    rng = random.Random(f"{seed}:{session_id}")
    if world == DEFAULT_WORLD:  # the original draws, in their order: same seed, same data
        fps = rng.choice((15, 20, 24))
        offset_ms = round(rng.uniform(40, 160), 1)
        video = VP8
    else:
        fps = rng.choice((15, 20, 25, 30))
        offset_ms = round(rng.uniform(20, 200), 1)
        video = rng.choice((H264, VP9))
    profile = PROFILES[index % len(PROFILES)]
    rover = ROVERS[index % len(ROVERS)]
    directory = Layout(root).recording_dir(session_id)
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


def prefixed_session_ids(count: int, seed: int, prefix: str) -> list[str]:
    """`PREFIX-SEED-NNNN` ids with max(2, count // 5) held out when count allows it.

    A demo data set must exercise the held-out evaluation; the partition itself is the
    product's hash rule, the generator only picks names.
    """
    held_target = max(2, round(count / 5)) if count >= 4 else 0
    train_target = count - held_target
    chosen: list[str] = []
    held = train = 0
    candidate = 0
    while len(chosen) < count:
        name = f"{prefix}-{seed}-{candidate:04d}"
        candidate += 1
        if is_held_out(name):
            if held < held_target or train >= train_target:
                chosen.append(name)
                held += 1
        elif train < train_target:
            chosen.append(name)
            train += 1
    return chosen


def _write_one(args: tuple[str, str, int, int, float, bool, str]) -> WrittenSession:
    root, session_id, index, seed, minutes, shuffle, world = args
    return write_session(Path(root), session_id, index, seed, minutes, shuffle, world)


def write_dataset(
    out: str,
    sessions: int,
    minutes: float,
    seed: int,
    *,
    shuffle_commands: bool = False,
    workers: int = 2,
    world: str = DEFAULT_WORLD,
) -> WrittenDataset:
    root = Path(out).resolve()
    Layout(root).recordings.mkdir(parents=True, exist_ok=True)
    if world not in WORLDS:
        raise ValueError(f"unknown world {world!r}; known: {', '.join(WORLDS)}")
    ids = session_ids(sessions, seed, world)
    tasks = [
        (str(root), sid, i, seed, minutes, shuffle_commands, world) for i, sid in enumerate(ids)
    ]
    written = each_session(_write_one, tasks, workers)
    job_path = write_job(root, ids, seed)
    result: WrittenDataset = {
        "root": str(root),
        "job": str(job_path),
        "sessions": written,
        "heldOut": [sid for sid in ids if is_held_out(sid)],
    }
    if world != DEFAULT_WORLD:
        result["world"] = world
    return result


def default_job(root: Path, sessions: list[str], seed: int) -> JsonObject:
    """The demo data set's job.json."""
    return {
        "root": str(root),
        "sessions": list(sessions),
        "actionThreshold": 0.5,
        "seed": seed,
        # The product's defaults (the learning claims are made for them), plus a held-out
        # learning curve for the report.
        "config": {
            "threads": 2,
            "evalEverySteps": 250,
        },
    }
