"""Writing one imported recording (format v1) whole, or not at all.

Files are written into a hidden staging folder beside the recordings
(`.<id>.<pid>.importing`, not a session id, so no job lists it) and renamed into `recordings/<id>` with a no-replace rename:
a killed import leaves no recording or a complete one, and an existing one is never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.recording import FORMAT, Command
from rovertrain.importers.commands import COMMAND_ROLES, command_line
from rovertrain.store.durable import fsync_directory, rename_no_replace, write_durably
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.frame import VideoFrame
    from av.video.stream import VideoStream

MILLISECONDS = Fraction(1, 1000)
COMMANDS_FILE = "commands.ndjson"
WEBM_FILE = "camera.webm"
VP8_OPTIONS = {"deadline": "realtime", "cpu-used": "8"}
"""The synthetic recordings' settings (sim/synth.py): a browser MediaRecorder's VP8."""
VP8_BIT_RATE = 600_000


@dataclass(frozen=True)
class SessionMeta:
    session_id: str
    rover_id: str
    control_profile: str | None
    started_at_ms: float | None
    """Wall-clock start (ms since the epoch) when the source knows it; informational."""
    video_file: str
    offset_ms: float
    command_roles: Mapping[str, str] = field(default_factory=lambda: dict(COMMAND_ROLES))
    driven_by: str | None = None
    """The model that drove under supervision (its commands are the `by: policy` lines)."""


def recording_exists(root: Path, session_id: str) -> bool:
    return os.path.lexists(Layout(root).recording_dir(session_id))


def session_document(meta: SessionMeta) -> JsonObject:
    """session.json of the recording (format v1), keys in the format's order."""
    document: JsonObject = {
        "format": FORMAT,
        "sessionId": meta.session_id,
        "roverId": meta.rover_id,
        "controlProfile": meta.control_profile,
    }
    if meta.started_at_ms is not None:
        started = datetime.fromtimestamp(meta.started_at_ms / 1000, UTC)
        document["startedAt"] = started.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    document["video"] = {"file": meta.video_file, "offsetMs": round(meta.offset_ms, 3)}
    document["commands"] = {"file": COMMANDS_FILE}
    document["commandRoles"] = {name: role for name, role in meta.command_roles.items()}
    if meta.driven_by is not None:
        document["drivenBy"] = {"model": meta.driven_by}
    return document


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Staging:
    """The hidden folder one recording is written into before it is renamed into place."""

    def __init__(self, root: Path, session_id: str):
        self.recordings = Layout(root).recordings
        self.target = Layout(root).recording_dir(session_id)
        self.prefix = f".{session_id}."
        self.path = self.recordings / f"{self.prefix}{os.getpid()}.importing"

    def __enter__(self) -> Staging:
        self.recordings.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers()
        self.path.mkdir()
        return self

    def _remove_leftovers(self) -> None:
        """Staging folders of this session left by imports that were killed (their process
        is gone); a running import's folder (another process) is left alone."""
        for entry in os.scandir(self.recordings):
            name = entry.name
            if not (name.startswith(self.prefix) and name.endswith(".importing")):
                continue
            pid = name[len(self.prefix) : -len(".importing")]
            if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
                shutil.rmtree(entry.path, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        if os.path.lexists(self.path):
            shutil.rmtree(self.path, ignore_errors=True)

    def commit(self, meta: SessionMeta, commands: Sequence[Command]) -> bool:
        """Write the command log and session.json and move the folder into place; False when
        a recording of that id appeared meanwhile (another import got there first)."""
        log = "".join(json.dumps(command_line(command)) + "\n" for command in commands)
        write_durably(self.path / COMMANDS_FILE, log.encode())
        document = json.dumps(session_document(meta), indent=2) + "\n"
        write_durably(self.path / "session.json", document.encode())
        fsync_directory(self.path)
        try:
            rename_no_replace(self.path, self.target)
        except OSError as error:
            if os.path.lexists(self.target):
                return False
            raise error
        fsync_directory(self.recordings)
        return True


class Vp8Writer:
    """Frames into a VP8 WebM at their own times (ms), like the synthetic recordings."""

    def __init__(self, path: Path, threads: int = 1):
        import av

        self.path = path
        self.threads = threads
        self.container: OutputContainer = av.open(str(path), mode="w", format="webm")
        self.stream: VideoStream | None = None
        self.frames = 0
        self.last_pts = -1

    def add(self, frame: VideoFrame, time_ms: float) -> bool:
        """Encode `frame` shown at `time_ms` (≥ 0); False (not written) if the time is not
        after the previous frame's once rounded to a millisecond."""
        pts = round(time_ms)
        if pts <= self.last_pts:
            return False
        if self.stream is None:
            stream = self.container.add_stream("libvpx", rate=30)
            stream.width, stream.height = (
                frame.width - frame.width % 2,
                frame.height - frame.height % 2,
            )
            stream.pix_fmt = "yuv420p"
            stream.time_base = MILLISECONDS
            stream.codec_context.time_base = MILLISECONDS
            stream.bit_rate = VP8_BIT_RATE
            stream.codec_context.options = dict(VP8_OPTIONS)
            stream.codec_context.thread_count = self.threads
            self.stream = stream
        if (
            frame.format.name != "yuv420p"
            or frame.width != self.stream.width
            or frame.height != self.stream.height
        ):
            frame = frame.reformat(
                width=self.stream.width, height=self.stream.height, format="yuv420p"
            )
        frame.pts = pts
        frame.time_base = MILLISECONDS
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.last_pts = pts
        self.frames += 1
        return True

    def close(self) -> None:
        if self.stream is None:  # no frame: nothing to keep (FFmpeg refuses an empty WebM)
            with contextlib.suppress(Exception):
                self.container.close()
            return
        try:
            for packet in self.stream.encode():
                self.container.mux(packet)
        finally:
            self.container.close()

    def __enter__(self) -> Vp8Writer:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            self.close()
        else:
            with contextlib.suppress(Exception):
                self.container.close()
