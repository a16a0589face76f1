"""The one recorder of the simulated worlds: what a rover's recorder writes (format v1,
docs/recording-format.md): a video written one picture at a time (`VideoRecorder`), the
command log and session.json (`SessionFiles`), the data set's session names and its ready job.
`synth` (every world) and `drive --supervised --record` write through it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.partition import is_held_out
from rovertrain.data.recording import FORMAT, CommandLine
from rovertrain.sim.choices import CONTINUOUS
from rovertrain.store.layout import Layout

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


@dataclass(frozen=True)
class SessionTask:
    """One session of a data set to record: where, its name and index, the data set's seed
    and the session's length."""

    root: Path
    session_id: str
    index: int
    seed: int
    minutes: float

    @property
    def directory(self) -> Path:
        return Layout(self.root).recording_dir(self.session_id)


@dataclass(frozen=True)
class RecordedDataset(Generic[R]):
    root: Path
    job: Path
    sessions: list[R]  # what each session's writer reports
    held_out: list[str]

    def synthesized(self, world: str | None, driver: str) -> dict[str, object]:
        """The `synthesized` event's fields; `world` None: the default world, not named; the
        driver named when not the default (`choices.CONTINUOUS`)."""
        fields: dict[str, object] = {
            "root": str(self.root),
            "job": str(self.job),
            "sessions": self.sessions,
            "heldOut": self.held_out,
        }
        if world is not None:
            fields["world"] = world
        if driver != CONTINUOUS:
            fields["driver"] = driver
        return fields


def record_dataset(
    out: str,
    ids: list[str],
    seed: int,
    minutes: float,
    write: Callable[[SessionTask], R],
    workers: int,
) -> RecordedDataset[R]:
    """The sessions `ids` under OUT/recordings, each written by `write` (a module-level
    function or a partial of one: it may run in a worker process), and a ready OUT/job.json."""
    root = Path(out).resolve()
    Layout(root).recordings.mkdir(parents=True, exist_ok=True)
    tasks = [SessionTask(root, sid, i, seed, minutes) for i, sid in enumerate(ids)]
    written = each_session(write, tasks, workers)
    job = write_job(root, ids, seed)
    return RecordedDataset(root, job, written, [sid for sid in ids if is_held_out(sid)])
