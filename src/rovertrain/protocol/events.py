"""The NDJSON event stream on stdout: the product's main interface.

One JSON object per line, written with a single write and flushed. stdout is reserved for
events: `claim_stdout` keeps a private duplicate of the real stdout and points fd 1 at stderr,
so stray prints, warnings or native libraries writing to fd 1 can never corrupt the stream.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol, TypeAlias, runtime_checkable

import orjson

from rovertrain.contracts.clock import SYSTEM_CLOCK, Clock

FORMAT_VERSION = 1
TERMINAL_KINDS = frozenset({"complete", "error"})

Event: TypeAlias = dict[str, object]
"""One event as emitted: the envelope and the fields, values that `encode` serialises (JSON
values, numpy scalars and arrays, paths, sets)."""

# Fields each kind must carry beyond the envelope: the `required` lists of
# `schemas/events.schema.json`, kind for kind and in the same order (tests/test_events.py keeps
# them equal). The schema is the full contract; this table, kept in code so that an installed
# package needs no schema file, lets production turn a malformed event into an `internal`
# error instead of writing it.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "started": ("jobId", "version", "config"),
    "dependencies": (
        "python",
        "rovertrain",
        "torch",
        "numpy",
        "av",
        "ffmpeg",
        "parameters",
        "specification",
        "selfTest",
    ),
    "validated": ("root", "sessions"),
    "phase": ("phase", "elapsedSeconds"),
    "heartbeat": ("phase", "elapsedSeconds"),
    "dataset": ("sessionId", "windows", "sampled", "diagnostics"),
    "skipped": ("sessionId", "code", "reason"),
    "store": ("sessions", "new", "read", "unread"),
    "progress": ("steps", "examples", "loss", "losses", "examplesPerSecond", "elapsedSeconds"),
    "evaluation": ("steps", "metrics"),
    "inspected": ("sessions", "skipped"),
    "paused": ("phase", "elapsedSeconds"),
    "resumed": ("phase", "pausedSeconds", "elapsedSeconds"),
    "synthesized": ("root", "job", "sessions"),
    "model": ("id", "valid"),
    "published": ("id", "name", "path"),
    "report": ("path", "width", "height"),
    "schema": ("name", "schema"),
    "exported": ("id", "path", "files", "parity"),
    "current": ("current", "valid"),
    "prediction": ("sessionId", "t", "types"),
    "replayed": ("sessionId", "ticks", "types"),
    "rollout": (
        "world",
        "controller",
        "seed",
        "seconds",
        "inLaneFraction",
        "meanAbsOffset",
        "firstDepartureSeconds",
        "obstacles",
        "commandsPerSecond",
    ),
    "drove": ("world", "seeds", "seconds", "controllers", "margins"),
    "ranks": ("ranks",),
    "imported": ("source", "sessionId", "frames", "commands", "dropped", "path", "dryRun"),
    "review": ("url", "root"),
    "complete": ("trained", "accepted", "rejected"),
    "error": ("code", "message"),
}


class ContractViolation(Exception):
    """An event that does not satisfy its own contract (a bug in rovertrain)."""


def non_finite_path(value: object, path: str = "") -> str | None:
    """JSON pointer of the first non-finite float inside `value`, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "/")
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_finite_path(item, f"{path}/{key}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = non_finite_path(item, f"{path}/{index}")
            if found:
                return found
    return None


@runtime_checkable
class _ToList(Protocol):
    """numpy scalars and arrays, without importing numpy here."""

    def tolist(self) -> object: ...


def _default(value: object) -> object:
    if isinstance(value, _ToList):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def encode(event: Event) -> bytes:
    line: bytes = orjson.dumps(event, default=_default, option=orjson.OPT_SERIALIZE_NUMPY)
    return line + b"\n"


def check_event(event: Event) -> None:
    kind = event.get("kind")
    if kind not in REQUIRED_FIELDS:
        raise ContractViolation(f"unknown event kind {kind!r}")
    missing = [name for name in REQUIRED_FIELDS[kind] if name not in event]
    if missing:
        raise ContractViolation(f"{kind} event lacks {', '.join(missing)}")
    bad = non_finite_path(event)
    if bad:
        raise ContractViolation(f"{kind} event has a non-finite number at {bad}")


class EventStream:
    """Writes events to a file descriptor and, optionally, appends them to a replay log.

    `last_emit` is on `clock` (the job's, so that heartbeats can tell how long it was quiet).
    """

    def __init__(self, fd: int | None, *, strict: bool | None = None, clock: Clock = SYSTEM_CLOCK):
        self._fd = fd
        self.clock = clock
        self._seq = 0
        self._lock = threading.RLock()
        self._job_id: str | None = None
        self._mirror: IO[bytes] | None = None
        self.terminal_written = False
        self.reader_gone = False
        self.last_emit = clock.monotonic()
        self.on_reader_gone: Callable[[], None] | None = None
        self.listeners: list[Callable[[Event], None]] = []
        if strict is None:
            strict = os.environ.get("ROVERTRAIN_STRICT_EVENTS") == "1"
        self.strict = strict

    @property
    def fd(self) -> int | None:
        return self._fd

    def bind_job(self, job_id: str) -> None:
        self._job_id = job_id

    def continue_after(self, seq: int) -> None:
        """Number the next event `seq + 1`: a launcher ending the stream its rank 0 began."""
        with self._lock:
            self._seq = seq + 1

    def mirror_to(self, path: Path) -> None:
        """Append every later event, flushed per line, to `path` (the job's replay log)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._mirror = open(path, "ab", buffering=0)  # noqa: SIM115 - closed in close()

    def emit(self, kind: str, **fields: object) -> None:
        with self._lock:
            if self.terminal_written:
                raise ContractViolation(f"{kind} event after the terminal event")
            event = self._envelope(kind, fields)
            try:
                check_event(event)
                line = encode(event)
            except (ContractViolation, TypeError) as violation:
                if self.strict:
                    raise ContractViolation(str(violation)) from violation
                event = self._envelope(
                    "error",
                    {
                        "code": "internal",
                        "message": "rovertrain produced an invalid event; this is a bug.",
                        "detail": str(violation),
                    },
                )
                line = encode(event)
            self._seq += 1
            if event["kind"] in TERMINAL_KINDS:
                self.terminal_written = True
            self._write(line)
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception as error:
                    self.listeners.remove(listener)
                    sys.stderr.write(
                        f"rovertrain: {type(listener).__name__} disabled after an error: {error}\n"
                    )

    def _envelope(self, kind: str, fields: dict[str, object]) -> Event:
        event: Event = {
            "kind": kind,
            "v": FORMAT_VERSION,
            "seq": self._seq,
            "time": int(time.time() * 1000),
        }
        if self._job_id is not None:
            event["jobId"] = self._job_id
        event.update(fields)
        return event

    def _write(self, line: bytes) -> None:
        self.last_emit = self.clock.monotonic()
        if self._mirror is not None:
            self._mirror.write(line)
        if self._fd is None or self.reader_gone:
            return
        view = memoryview(line)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except (BrokenPipeError, ConnectionResetError):
            self.reader_gone = True
            if self.on_reader_gone is not None:
                self.on_reader_gone()

    def acquire(self, timeout: float) -> bool:
        return self._lock.acquire(timeout=timeout)

    def release(self) -> None:
        self._lock.release()

    def close(self) -> None:
        with self._lock:
            if self._mirror is not None:
                self._mirror.close()
                self._mirror = None


def claim_stdout() -> int:
    """Keep a private duplicate of fd 1 for events; point fd 1 (and sys.stdout) at stderr."""
    sys.stdout.flush()
    private = os.dup(1)
    os.set_inheritable(private, False)
    os.dup2(2, 1)
    return private
