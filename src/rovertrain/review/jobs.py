"""The root's jobs and their curves: which job runs, and each log read from a byte offset so
a live job's page only fetches what the log gained since its last look."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import orjson

from rovertrain.contracts.json_types import JsonObject
from rovertrain.protocol.eventlog import flock_held
from rovertrain.protocol.events import TERMINAL_KINDS
from rovertrain.store.layout import Layout

# What the job page draws: losses (progress), held-out figures (evaluation) against the gate
# (started), and how the job ended.
CURVE_KINDS = frozenset(
    {"started", "phase", "progress", "evaluation", "published", "complete", "error"}
)
MAX_READ_BYTES = 8 * 2**20  # per request: a long log arrives over a few polls
TAIL_BYTES = 64 * 1024  # a log's end, where its terminal event is


@dataclass(frozen=True)
class JobLog:
    id: str
    path: Path
    state: str  # "running", "ended" (a terminal event), "interrupted" (none, not running)
    modified_ns: int

    def to_json(self) -> JsonObject:
        return {"id": self.id, "state": self.state, "running": self.state == "running"}


def list_jobs(root: Path) -> list[JobLog]:
    """Every job folder under training/jobs with an event log, oldest log first. The root's
    lock says whether a job runs, not which: the lock is the root's. The running one is the
    newest log without a terminal event; an older log without one is a job that was killed."""
    jobs_dir = Layout(root).training / "jobs"
    found: list[tuple[int, str, Path, bool]] = []
    try:
        if stat.S_ISLNK(os.lstat(jobs_dir).st_mode):
            return []  # never follow a link out of the root
        entries = list(os.scandir(jobs_dir))
    except OSError:
        return []
    for entry in entries:
        events = Path(entry.path) / "events.ndjson"
        try:
            info = os.lstat(events)
        except OSError:
            continue
        if entry.is_dir(follow_symlinks=False) and stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime_ns, entry.name, events, _has_terminal_event(events)))
    found.sort()
    locked = flock_held(Layout(root).lock)
    open_logs = [name for _, name, _, ended in found if not ended]
    running = open_logs[-1] if locked and open_logs else None
    return [
        JobLog(
            name, path, "ended" if ended else "running" if name == running else "interrupted", ns
        )
        for ns, name, path, ended in found
    ]


def _has_terminal_event(path: Path) -> bool:
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            stream.seek(max(0, size - TAIL_BYTES))
            tail = stream.read()
    except OSError:
        return False
    for line in reversed(tail.splitlines()):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("kind") in TERMINAL_KINDS:
            return True
    return False


@dataclass(frozen=True)
class LogChunk:
    events: list[JsonObject]
    next_offset: int  # where the next read starts: after the last whole line
    size: int  # the log's size when read


def read_chunk(path: Path, offset: int, final: bool) -> LogChunk:
    """The whole lines of the log from `offset` on, kept to the kinds the page draws. A line
    still being written waits for the next read, unless the log is `final` (its job no longer
    runs: the line stays torn) or longer than a read (no page needs it): then it is passed."""
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        offset = min(max(0, offset), size)
        stream.seek(offset)
        data = stream.read(MAX_READ_BYTES)
    end = data.rfind(b"\n") + 1
    giant_line = end == 0 and len(data) == MAX_READ_BYTES
    torn_for_good = final and offset + len(data) == size
    if giant_line or torn_for_good:
        end = len(data)
    events: list[JsonObject] = []
    for line in data[:end].splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn or foreign line: the job page shows what it can
        if isinstance(event, dict) and event.get("kind") in CURVE_KINDS:
            events.append(event)
    return LogChunk(events, offset + end, size)
