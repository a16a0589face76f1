"""Recording format v1: `recordings/<sessionId>/session.json` and its command log.

Reads only regular files inside the session folder (no symlinks, FIFOs or devices) and turns
them into a validated `Recording`. No av, no torch: the video itself is opened elsewhere.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rovertrain.data.command_schema import ROLES
from rovertrain.errors import SkipSession
from rovertrain.identifiers import IDENTIFIER
from rovertrain.job.config import loads_strict, valid_identifier

FORMAT = "rovertrain-recording/1"
FILE_NAME = IDENTIFIER
MAX_SESSION_JSON_BYTES = 1 << 20
MAX_COMMAND_LOG_BYTES = 256 << 20
BACKWARDS_TOLERANCE_MS = 1000.0


@dataclass(frozen=True)
class Command:
    t: float
    type: str
    values: Mapping[str, float] = field(default_factory=dict)


@dataclass
class CommandLog:
    commands: list[Command]
    invalid_lines: int = 0
    clipped_values: int = 0
    lines: int = 0


@dataclass(frozen=True)
class Recording:
    session_id: str
    directory: Path
    rover_id: str
    control_profile: str | None
    video_path: Path
    video_offset_ms: float
    commands_path: Path
    command_roles: Mapping[str, str]


def _lstat(path: Path, missing: SkipSession) -> os.stat_result:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        raise missing from None
    except OSError as error:
        raise SkipSession(
            "invalid_recording", f"cannot read {path.name}: {error.strerror}"
        ) from None


def session_directory(root: Path, session_id: str) -> Path:
    """The session folder, refusing ids and folders that could lead outside the root."""
    if not valid_identifier(session_id):
        raise SkipSession("unsafe_path", f"session id {session_id!r} is not a safe folder name")
    recordings = root / "recordings"
    directory = recordings / session_id
    info = _lstat(directory, SkipSession("missing_recording", f"no folder recordings/{session_id}"))
    if stat.S_ISLNK(info.st_mode):
        raise SkipSession("unsafe_path", "the session folder is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise SkipSession("invalid_recording", "recordings/<session> is not a folder")
    if os.path.realpath(directory) != os.path.join(os.path.realpath(recordings), session_id):
        raise SkipSession("unsafe_path", "the session folder resolves outside the data root")
    return directory


def regular_file(directory: Path, name: Any, what: str) -> Path:
    """Path of a regular file directly inside `directory`; refuse links, FIFOs, devices."""
    if not isinstance(name, str) or not FILE_NAME.match(name) or name in {".", ".."}:
        raise SkipSession("unsafe_path", f"{what} file name {name!r} is not a plain file name")
    path = directory / name
    info = _lstat(path, SkipSession("invalid_recording", f"{what} file {name} is missing"))
    if stat.S_ISLNK(info.st_mode):
        raise SkipSession("unsafe_path", f"{what} file {name} is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise SkipSession("unsafe_path", f"{what} file {name} is not a regular file")
    return path


def read_small(path: Path, limit: int) -> bytes:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SkipSession("unsafe_path", f"{path.name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SkipSession("invalid_recording", f"{path.name} is larger than {limit} bytes")
    return data


def load_recording(root: Path, session_id: str) -> Recording:
    directory = session_directory(root, session_id)
    meta_path = regular_file(directory, "session.json", "session")
    try:
        meta = loads_strict(read_small(meta_path, MAX_SESSION_JSON_BYTES).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise SkipSession(
            "invalid_recording", f"session.json is not valid JSON ({error})"
        ) from None
    if not isinstance(meta, dict):
        raise SkipSession("invalid_recording", "session.json must be an object")

    def bad(message: str) -> SkipSession:
        return SkipSession("invalid_recording", f"session.json: {message}")

    if meta.get("format") != FORMAT:
        raise bad(f"format must be {FORMAT!r}, got {meta.get('format')!r}")
    if meta.get("sessionId") != session_id:
        raise bad(f"sessionId {meta.get('sessionId')!r} does not match the folder {session_id!r}")
    rover = meta.get("roverId")
    if not isinstance(rover, str) or not rover:
        raise bad("roverId must be a non-empty string")
    profile = meta.get("controlProfile")
    if profile is not None and not isinstance(profile, str):
        raise bad("controlProfile must be a string or null")
    video = meta.get("video")
    if not isinstance(video, dict):
        raise bad("video must be an object with file and offsetMs")
    offset = video.get("offsetMs", 0)
    if isinstance(offset, bool) or not isinstance(offset, int | float) or abs(offset) > 60_000:
        raise bad("video.offsetMs must be a number of milliseconds within ±60000")
    commands = meta.get("commands")
    if not isinstance(commands, dict):
        raise bad("commands must be an object with file")
    roles = meta.get("commandRoles", {})
    if not isinstance(roles, dict) or not all(
        isinstance(key, str) and value in ROLES for key, value in roles.items()
    ):
        raise bad(f"commandRoles must map command types to one of {', '.join(ROLES)}")
    return Recording(
        session_id=session_id,
        directory=directory,
        rover_id=rover,
        control_profile=profile,
        video_path=regular_file(directory, video.get("file"), "video"),
        video_offset_ms=float(offset),
        commands_path=regular_file(directory, commands.get("file"), "command log"),
        command_roles=dict(roles),
    )


def parse_command_line(line: str) -> Command | None:
    """One command, or None when the line is not a valid command."""
    try:
        item = loads_strict(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(item, dict):
        return None
    t = item.get("t")
    kind = item.get("type")
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        return None
    if not isinstance(kind, str) or not kind or len(kind) > 64:
        return None
    values = item.get("values", {})
    if values is None:
        values = {}
    if not isinstance(values, dict) or len(values) > 32:
        return None
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if not math.isfinite(value) or len(name) > 64:
            return None
    return Command(float(t), kind, {name: float(value) for name, value in values.items()})


def parse_command_log(text: str) -> CommandLog:
    """Parse the NDJSON command log; bad lines are counted and skipped.

    A line whose `t` goes backwards by more than a second is bad; smaller jitter is kept and
    the commands are returned sorted by time.
    """
    log = CommandLog(commands=[])
    latest = -math.inf
    for raw in text.splitlines():
        if not raw.strip():
            continue
        log.lines += 1
        command = parse_command_line(raw)
        if command is None or command.t < latest - BACKWARDS_TOLERANCE_MS:
            log.invalid_lines += 1
            continue
        latest = max(latest, command.t)
        clipped = {name: min(1.0, max(-1.0, value)) for name, value in command.values.items()}
        if clipped != command.values:
            log.clipped_values += 1
            command = Command(command.t, command.type, clipped)
        log.commands.append(command)
    log.commands.sort(key=lambda command: command.t)
    return log


def read_command_log(recording: Recording) -> CommandLog:
    raw = read_small(recording.commands_path, MAX_COMMAND_LOG_BYTES)
    log = parse_command_log(raw.decode("utf-8", errors="replace"))
    if log.lines and log.invalid_lines * 2 > log.lines:
        raise SkipSession(
            "invalid_recording",
            f"command log is mostly invalid ({log.invalid_lines} of {log.lines} lines bad)",
        )
    return log
