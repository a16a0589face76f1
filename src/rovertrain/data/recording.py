"""Recording format v1: `recordings/<sessionId>/session.json` and its command log.

Reads only regular files inside the session folder (no symlinks, FIFOs or devices), bounded
in size, and turns them into a validated `Recording`. No av, no torch: the video itself is
opened elsewhere. Whatever the folder holds, the outcome is a `Recording`, a `CommandLog` whose
bad lines are counted by reason, or a `SkipSession` with a stable code; the rules and limits are
documented in docs/recording-format.md and agree with schemas/{session,command}.schema.json
(tests/test_format_agreement.py).
"""

from __future__ import annotations

import errno
import math
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NotRequired, TypedDict, TypeGuard

from rovertrain.contracts.command_schema import HUMAN, ROLES, SENDERS
from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.identifiers import IDENTIFIER, valid_identifier
from rovertrain.contracts.strict_json import MAX_JSON_DEPTH, BadJson, parse_json, show

FORMAT = "rovertrain-recording/1"
FILE_NAME = IDENTIFIER
MAX_SESSION_JSON_BYTES = 1 << 20
"""Largest session.json read (bigger: skipped, `too_large`)."""
MAX_COMMAND_LOG_BYTES = 256 << 20
"""Largest command log read (bigger: skipped, `too_large`)."""
MAX_COMMAND_LINE_BYTES = 64 << 10
"""Longest command-log line, newline excluded (longer: dropped, `too_long`)."""
MAX_COMMANDS = 2_000_000
"""Most non-blank command-log lines (more: skipped, `too_large`)."""
MAX_TIME_MS = 2**53 - 1
"""Largest |t| of a command: the integers a double holds exactly."""
MAX_NAME_CHARS = 64
"""Longest command type and value name."""
MAX_TEXT_CHARS = 256
"""Longest roverId and controlProfile."""
MAX_VALUES = 32
"""Most values on one command."""
MAX_OFFSET_MS = 60_000
BACKWARDS_TOLERANCE_MS = 1000.0
_CHUNK_BYTES = 1 << 20

DROP_REASONS = (
    "too_long",
    "invalid_utf8",
    "invalid_json",
    "duplicate_key",
    "number_out_of_range",
    "too_deep",
    "invalid_unicode",
    "invalid_command",
    "time_backwards",
)
"""Why a command-log line is dropped: the keys of `CommandLog.dropped`."""


@dataclass(frozen=True)
class RecordingLimits:
    """The reading limits; the defaults are the module constants above."""

    session_json_bytes: int = MAX_SESSION_JSON_BYTES
    command_log_bytes: int = MAX_COMMAND_LOG_BYTES
    command_line_bytes: int = MAX_COMMAND_LINE_BYTES
    commands: int = MAX_COMMANDS
    json_depth: int = MAX_JSON_DEPTH


DEFAULT_LIMITS = RecordingLimits()


@dataclass(frozen=True, slots=True)
class Command:
    t: float
    type: str
    values: Mapping[str, float] = field(default_factory=dict)
    by: str = HUMAN


class CommandLine(TypedDict):
    """One command-log line as the writers write it (keys in this order; `values` left out
    when the command carries none)."""

    t: float
    type: str
    values: NotRequired[dict[str, float]]
    by: NotRequired[str]  # one of SENDERS; left out for a person's commands


@dataclass
class CommandLog:
    commands: list[Command]
    invalid_lines: int = 0
    clipped_values: int = 0
    lines: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    """Dropped lines per reason (one of DROP_REASONS); they sum to invalid_lines."""

    def drop(self, reason: str) -> None:
        self.invalid_lines += 1
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


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
    driven_by: str | None = None  # session.json drivenBy.model: the model that drove, if said
    started_at: str | None = None  # session.json startedAt, shown as written, not interpreted


def _lstat(path: Path, missing: SkipSession) -> os.stat_result:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        raise missing from None
    except OSError as error:
        raise SkipSession(
            "invalid_recording", f"cannot read {path.name}: {error.strerror}"
        ) from None


def list_sessions(root: Path) -> list[str]:
    """Every session folder under `root/recordings` whose name is a valid id, sorted."""
    try:
        names = [entry.name for entry in os.scandir(root / "recordings") if entry.is_dir()]
    except OSError:
        return []
    return sorted(name for name in names if valid_identifier(name))


def session_directory(root: Path, session_id: str) -> Path:
    """The session folder, refusing ids and folders that could lead outside the root."""
    # fullmatch: `$` alone would let a trailing newline through.
    if not valid_identifier(session_id) or not FILE_NAME.fullmatch(session_id):
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


def regular_file(directory: Path, name: object, what: str) -> Path:
    """Path of a regular file directly inside `directory`; refuse links, FIFOs, devices."""
    if not isinstance(name, str):
        raise SkipSession("invalid_recording", f"session.json: the {what} file name is missing")
    if not FILE_NAME.fullmatch(name) or name in {".", ".."}:
        raise SkipSession("unsafe_path", f"{what} file name {show(name)} is not a plain file name")
    path = directory / name
    info = _lstat(path, SkipSession("invalid_recording", f"{what} file {name} is missing"))
    if stat.S_ISLNK(info.st_mode):
        raise SkipSession("unsafe_path", f"{what} file {name} is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise SkipSession("unsafe_path", f"{what} file {name} is not a regular file")
    return path


def open_regular(path: Path, limit: int) -> IO[bytes]:
    """Open a regular file for reading without following links or blocking on a FIFO.

    Refuses (SkipSession) anything else, and files over `limit` bytes.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SkipSession("unsafe_path", f"{path.name} is a symbolic link") from None
        raise SkipSession(
            "invalid_recording", f"cannot open {path.name}: {error.strerror}"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkipSession("unsafe_path", f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise SkipSession("too_large", f"{path.name} is larger than {limit} bytes")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(path: Path, limit: int) -> bytes:
    with open_regular(path, limit) as stream:
        try:
            data = stream.read(limit + 1)
        except OSError as error:
            raise SkipSession(
                "invalid_recording", f"cannot read {path.name}: {error.strerror}"
            ) from None
    if len(data) > limit:
        raise SkipSession("too_large", f"{path.name} is larger than {limit} bytes")
    return data


def _is_number(value: object) -> TypeGuard[int | float]:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _text(value: object, shortest: int) -> TypeGuard[str]:
    return isinstance(value, str) and shortest <= len(value) <= MAX_TEXT_CHARS


def load_recording(
    root: Path, session_id: str, limits: RecordingLimits = DEFAULT_LIMITS
) -> Recording:
    directory = session_directory(root, session_id)
    meta_path = regular_file(directory, "session.json", "session")
    raw = read_small(meta_path, limits.session_json_bytes)
    try:
        meta: object = parse_json(raw.decode("utf-8-sig"), limits.json_depth)  # -sig: drop a BOM
    except UnicodeDecodeError:
        raise SkipSession("invalid_recording", "session.json is not UTF-8") from None
    except BadJson as error:
        raise SkipSession("invalid_recording", f"session.json: {error} ({error.reason})") from None
    if not isinstance(meta, dict):
        raise SkipSession("invalid_recording", "session.json must be an object")

    def bad(message: str) -> SkipSession:
        return SkipSession("invalid_recording", f"session.json: {message}")

    if meta.get("format") != FORMAT:
        raise bad(f"format must be {FORMAT!r}, got {show(meta.get('format'))}")
    if meta.get("sessionId") != session_id:
        raise bad(
            f"sessionId {show(meta.get('sessionId'))} does not match the folder {session_id!r}"
        )
    rover = meta.get("roverId")
    if not _text(rover, 1):
        raise bad(f"roverId must be a string of 1 to {MAX_TEXT_CHARS} characters")
    profile = meta.get("controlProfile")
    if profile is not None and not _text(profile, 0):
        raise bad(f"controlProfile must be null or a string of at most {MAX_TEXT_CHARS} characters")
    video = meta.get("video")
    if not isinstance(video, dict):
        raise bad("video must be an object with file and offsetMs")
    offset = video.get("offsetMs", 0)
    if not _is_number(offset) or abs(offset) > MAX_OFFSET_MS:
        raise bad(f"video.offsetMs must be a number of milliseconds within ±{MAX_OFFSET_MS}")
    commands = meta.get("commands")
    if not isinstance(commands, dict):
        raise bad("commands must be an object with file")
    roles = meta.get("commandRoles", {})
    if not isinstance(roles, dict) or not all(
        isinstance(value, str) and value in ROLES for value in roles.values()
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
        driven_by=driving_model(meta.get("drivenBy")),
        started_at=started if isinstance(started := meta.get("startedAt"), str) else None,
    )


def driving_model(driven_by: object) -> str | None:
    """session.json's optional, informational `drivenBy.model`; anything else than a string of
    1 to MAX_TEXT_CHARS characters reads as not said (the recording stays usable)."""
    model = driven_by.get("model") if isinstance(driven_by, dict) else None
    return model if _text(model, 1) else None


def command_from_json(item: object) -> Command:
    """The command a parsed line holds; BadJson("invalid_command") when it is not one."""

    def bad(message: str) -> BadJson:
        return BadJson("invalid_command", message)

    if not isinstance(item, dict):
        raise bad("a command must be an object")
    t = item.get("t")
    if not _is_number(t) or abs(t) > MAX_TIME_MS:
        raise bad(f"t must be a number of milliseconds within ±{MAX_TIME_MS}")
    kind = item.get("type")
    if not isinstance(kind, str) or not 1 <= len(kind) <= MAX_NAME_CHARS:
        raise bad(f"type must be a string of 1 to {MAX_NAME_CHARS} characters")
    values = item.get("values")
    if values is None:
        values = {}
    if not isinstance(values, dict) or len(values) > MAX_VALUES:
        raise bad(f"values must be null or an object with at most {MAX_VALUES} numbers")
    for name, value in values.items():
        if not _is_number(value) or len(name) > MAX_NAME_CHARS:
            raise bad(f"each value must be a number named by at most {MAX_NAME_CHARS} characters")
    by = item.get("by", HUMAN)
    if by not in SENDERS:
        raise bad(f"by must be one of {', '.join(SENDERS)} (absent: {HUMAN})")
    return Command(float(t), kind, {name: float(value) for name, value in values.items()}, by)


def command_from_line(
    line: bytes | str, max_depth: int = MAX_JSON_DEPTH, max_bytes: int = MAX_COMMAND_LINE_BYTES
) -> Command:
    """One command-log line (newline and a trailing CR removed); BadJson when it is bad."""
    if len(line) > max_bytes:
        raise BadJson("too_long", f"line longer than {max_bytes} bytes")
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            raise BadJson("invalid_utf8", "line is not UTF-8") from None
    return command_from_json(parse_json(line, max_depth))


def _blank(line: bytes) -> bool:
    return not line.strip(b" \t\r")


def _split_lines(chunks: Iterator[bytes], max_bytes: int) -> Iterator[bytes | None]:
    """Lines split on LF (a trailing CR removed); None for a line longer than `max_bytes`.

    Never holds more than about one chunk plus `max_bytes` in memory.
    """
    pending = b""
    overlong = False
    for chunk in chunks:
        pending += chunk
        lines = pending.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if overlong:
                overlong = False
                yield None
            else:
                yield line[:-1] if line.endswith(b"\r") else line
        if len(pending) > max_bytes + 1:
            overlong, pending = True, b""
    if overlong:
        yield None
    elif pending:
        yield pending[:-1] if pending.endswith(b"\r") else pending


def _parse_lines(
    lines: Iterator[bytes | None], limits: RecordingLimits, name: str = "command log"
) -> CommandLog:
    log = CommandLog(commands=[])
    latest = -math.inf
    first = True
    for line in lines:
        if first and line is not None:
            line = line.removeprefix(b"\xef\xbb\xbf")
        first = False
        if line is not None and _blank(line):
            continue
        log.lines += 1
        if log.lines > limits.commands:
            raise SkipSession("too_large", f"{name} has more than {limits.commands} lines")
        try:
            if line is None:
                raise BadJson("too_long", "line too long")
            command = command_from_line(line, limits.json_depth, limits.command_line_bytes)
        except BadJson as error:
            log.drop(error.reason)
            continue
        if command.t < latest - BACKWARDS_TOLERANCE_MS:
            log.drop("time_backwards")
            continue
        latest = max(latest, command.t)
        clipped = {name: min(1.0, max(-1.0, value)) for name, value in command.values.items()}
        if clipped != command.values:
            log.clipped_values += 1
            command = Command(command.t, command.type, clipped, command.by)
        log.commands.append(command)
    log.commands.sort(key=lambda command: command.t)
    return log


def parse_command_log(text: str | bytes, limits: RecordingLimits = DEFAULT_LIMITS) -> CommandLog:
    """Parse the NDJSON command log; bad lines are counted by reason and skipped.

    A line whose `t` goes backwards by more than a second is bad; smaller jitter is kept and
    the commands are returned sorted by time.
    """
    data = text.encode("utf-8", errors="surrogatepass") if isinstance(text, str) else text
    return _parse_lines(_split_lines(iter([data]), limits.command_line_bytes), limits)


def read_command_log(recording: Recording, limits: RecordingLimits = DEFAULT_LIMITS) -> CommandLog:
    path = recording.commands_path
    with open_regular(path, limits.command_log_bytes) as stream:
        total = 0

        def chunks() -> Iterator[bytes]:
            nonlocal total
            while True:
                try:
                    chunk = stream.read(_CHUNK_BYTES)
                except OSError as error:
                    raise SkipSession(
                        "invalid_recording", f"cannot read {path.name}: {error.strerror}"
                    ) from None
                if not chunk:
                    return
                total += len(chunk)
                if total > limits.command_log_bytes:
                    raise SkipSession(
                        "too_large", f"{path.name} is larger than {limits.command_log_bytes} bytes"
                    )
                yield chunk

        log = _parse_lines(_split_lines(chunks(), limits.command_line_bytes), limits)
    if log.lines and log.invalid_lines * 2 > log.lines:
        raise SkipSession(
            "invalid_recording",
            f"command log is mostly invalid ({log.invalid_lines} of {log.lines} lines bad: "
            + ", ".join(f"{count} {reason}" for reason, count in sorted(log.dropped.items()))
            + ")",
        )
    return log
