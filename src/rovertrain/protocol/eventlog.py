"""A job's event log (`events.ndjson`): the one reader, and `rovertrain events JOBDIR [--follow]`.

The log is written one whole line per event. A line without its newline is a torn or still
growing last line: readers leave it out (and a follower picks it up once it is complete).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.protocol.events import TERMINAL_KINDS
from rovertrain.store.layout import JobDir


class EventLogReader:
    """Reads an event log as it grows: each `read` returns the lines completed since the last."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._pending = b""

    def fill(self) -> bool:
        """Take in what was written since the last call; False when nothing was."""
        chunk = self._stream.read()
        self._pending += chunk
        return bool(chunk)

    def take(self) -> list[tuple[bytes, dict[str, Any]]]:
        """(raw line, event) of every complete line taken in and not yet returned."""
        *lines, self._pending = self._pending.split(b"\n")
        return [(line, json.loads(line)) for line in lines if line.strip()]

    def read(self) -> list[tuple[bytes, dict[str, Any]]]:
        self.fill()
        return self.take()


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of the log at `path`, in order, without a torn last line."""
    with open(path, "rb") as stream:
        for _line, event in EventLogReader(stream).read():
            yield event


def job_running(job_dir: Path) -> bool:
    """Whether a job holds its root's lock (any job of the root: the lock is the root's)."""
    return flock_held(JobDir(job_dir).lock)


def flock_held(path: Path) -> bool:
    """Whether some process holds a flock on `path`, read from /proc/locks. Never takes the
    lock, even shared and for an instant: a job starting at that instant would find its root
    locked and exit 75."""
    try:
        info = os.stat(path)
        with open("/proc/locks") as stream:
            table = stream.read()
    except OSError:
        return False
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 8155 fe:00:2146649 0 EOF"; "1: -> FLOCK ..." waits
        if "FLOCK" in fields and "->" not in fields and wanted in fields:
            return True
    return False


def keep_previous_log(job_dir: Path) -> None:
    """A rerun under the same jobId starts a fresh log; the earlier one is kept beside it.

    `events.ndjson` becomes `events.<n>.ndjson`, n the first free number from 1.
    """
    files = JobDir(job_dir)
    if not files.events.exists():
        return
    number = 1
    while files.previous_events(number).exists():
        number += 1
    files.events.rename(files.previous_events(number))


def _outcome(event: Mapping[str, object]) -> object:
    """A `complete` event's evaluation status, else its reason."""
    evaluation = event.get("evaluation")
    reason = event.get("reason", "")
    return evaluation.get("status", reason) if isinstance(evaluation, dict) else reason


def render(event: Mapping[str, object]) -> str:
    """One event as a line for a person (`rovertrain events` on a terminal)."""
    kind = event.get("kind")
    milliseconds = event.get("time", 0)
    seconds = milliseconds / 1000 if isinstance(milliseconds, int | float) else 0.0
    stamp = time.strftime("%H:%M:%S", time.localtime(seconds))
    details: dict[str, Callable[[Mapping[str, object]], str]] = {
        "progress": lambda e: (
            f"step {e['steps']} loss {e['loss']:.4f} {e['examplesPerSecond']:.0f} ex/s"
        ),
        "dataset": lambda e: (
            f"{e['sessionId']} ({e.get('partition')}): {e['windows']} windows, {e['sampled']} sampled"
        ),
        "skipped": lambda e: f"{e['sessionId']} skipped ({e['code']}): {e['reason']}",
        "phase": lambda e: f"phase {e['phase']}",
        "error": lambda e: f"ERROR {e['code']}: {e['message']}",
        "complete": lambda e: (
            f"complete: trained={e['trained']} promote={e.get('promote')} {_outcome(e)}"
        ),
    }
    try:
        text = (
            details[kind](event)
            if isinstance(kind, str) and kind in details
            else json.dumps(
                {k: v for k, v in event.items() if k not in {"v", "seq", "time", "jobId"}}
            )[:160]
        )
    except (KeyError, TypeError, ValueError):
        text = ""
    return f"{stamp} {kind:<10} {text}"


def replay(job_dir_text: str, follow: bool, raw: bool | None, fd: int) -> int:
    job_dir = Path(job_dir_text)
    path = JobDir(job_dir).events
    if not path.exists():
        raise RovertrainError("not_found", f"No event log at {path}.")
    raw = (not os.isatty(fd)) if raw is None else raw
    with open(path, "rb") as stream:
        reader = EventLogReader(stream)
        while True:
            grew = reader.fill()
            for line, event in reader.take():
                _write(fd, line + b"\n" if raw else (render(event) + "\n").encode())
                if event.get("kind") in TERMINAL_KINDS:
                    return ExitCode.COMPLETED
            if grew:
                continue
            if not follow:
                return ExitCode.COMPLETED
            if not job_running(job_dir):
                # One last read: the job may have written its terminal event just now.
                if reader.fill():
                    continue
                raise RovertrainError(
                    "job_not_running",
                    "The job is not running and its log has no terminal event (it crashed).",
                )
            time.sleep(0.2)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
