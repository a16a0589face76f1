"""The fleet page's rows: every session under the root and every published model.

A root of a thousand sessions must answer in well under 200 ms, so what a session's files
say is read once and kept until the files change (`FileCache`, keyed by size and mtime);
the store's manifest and the jobs' logs are read again only when they change.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Generic, TypeVar

import orjson

from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import TICK_MS
from rovertrain.contracts.strict_json import BadJson
from rovertrain.data.partition import Partition, partition_of
from rovertrain.data.recording import (
    MAX_COMMAND_LOG_BYTES,
    command_from_json,
    list_sessions,
    load_recording,
    read_small,
)
from rovertrain.data.window_store.manifest import ManifestRow, manifest_path, read_manifest
from rovertrain.protocol.eventlog import read_events
from rovertrain.review.jobs import JobLog, list_jobs
from rovertrain.store.catalogue import ModelRecord, catalogue, field_of, field_reports
from rovertrain.store.current import current_path, read_current
from rovertrain.store.layout import Layout

T = TypeVar("T")
# A command line a policy sent (data/recording.py: `by` is "human" or "policy").
BY_POLICY = re.compile(rb'"by"\s*:\s*"policy"')


def _stamp(paths: list[Path]) -> tuple[tuple[int, int], ...] | None:
    """What says a set of files changed: their sizes and mtimes (None: one is missing)."""
    stamps = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            return None
        stamps.append((info.st_size, info.st_mtime_ns))
    return tuple(stamps)


class FileCache(Generic[T]):
    """Values computed from files, computed again only when those files change."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[object, T]] = {}
        self._lock = threading.Lock()

    def peek(self, key: str) -> T | None:
        with self._lock:
            found = self._values.get(key)
        return None if found is None else found[1]

    def get(self, key: str, paths: list[Path], compute: Callable[[], T]) -> T:
        stamp = _stamp(paths)
        with self._lock:
            found = self._values.get(key)
        if found is not None and stamp is not None and found[0] == stamp:
            return found[1]
        value = compute()
        with self._lock:
            self._values[key] = (stamp, value)
        return value


@dataclass(frozen=True)
class SessionFiles:
    """What a session's own files say (the recording, its command log)."""

    rover_id: str | None
    started_at: str | None
    commands: int | None
    policy_commands: int | None
    first_ms: float | None
    last_ms: float | None
    problem: str | None  # why the recording cannot be read (then most fields are None)
    watched: tuple[Path, ...] = ()  # the files these figures came from


def read_session_files(root: Path, session_id: str) -> SessionFiles:
    """The fleet row's figures from a session's files, without parsing its whole log: the
    table of a thousand sessions must come back fast the first time too (the session page and
    the job's `dataset` event count valid commands; here a command is a line of the log)."""
    try:
        recording = load_recording(root, session_id)
        data = read_small(recording.commands_path, MAX_COMMAND_LOG_BYTES)
    except SkipSession as skip:
        problem = f"{skip.code}: {skip.reason}"
        return SessionFiles(None, None, None, None, None, None, problem)
    lines = [line for line in data.removeprefix(b"\xef\xbb\xbf").splitlines() if line.strip()]
    return SessionFiles(
        rover_id=recording.rover_id,
        started_at=recording.started_at,
        commands=len(lines),
        policy_commands=len(BY_POLICY.findall(data)),
        first_ms=_time_of(lines[:1]),
        last_ms=_time_of(lines[-1:]),
        problem=None,
        watched=(recording.commands_path, recording.video_path),
    )


def _time_of(lines: list[bytes]) -> float | None:
    """`t` of a command line (None: no line, or not a command)."""
    try:
        command = command_from_json(orjson.loads(lines[0])) if lines else None
    except (orjson.JSONDecodeError, BadJson, IndexError):
        return None
    return None if command is None else command.t


def skips_in_log(path: Path) -> dict[str, str | None]:
    """Session id -> why this job skipped it (code: reason), or None: this job read it."""
    found: dict[str, str | None] = {}
    for event in read_events(path):
        session_id = event.get("sessionId")
        if not isinstance(session_id, str):
            continue
        if event.get("kind") == "skipped":
            found[session_id] = f"{event.get('code')}: {event.get('reason')}"
        elif event.get("kind") == "dataset":
            found[session_id] = None
    return found


class Fleet:
    """The fleet page's data for one root, cached between requests."""

    def __init__(self, root: Path):
        self.root = root
        self._sessions: FileCache[SessionFiles] = FileCache()
        self._manifest: FileCache[dict[str, ManifestRow]] = FileCache()
        self._models: FileCache[list[ModelRecord]] = FileCache()
        self._logs: FileCache[dict[str, str | None]] = FileCache()
        # One reader of every session at a time: a page opened while the start-up warm-up
        # runs waits for it and then answers from its cache, rather than read it all again.
        self._listing = threading.Lock()

    def session_files(self, session_id: str) -> SessionFiles:
        directory = self.root / "recordings" / session_id
        before = self._sessions.peek(session_id)
        watched = list(before.watched) if before is not None else []
        paths = [directory, directory / "session.json", *watched]
        return self._sessions.get(
            session_id, paths, lambda: read_session_files(self.root, session_id)
        )

    def manifest_rows(self) -> dict[str, ManifestRow]:
        path = manifest_path(self.root)
        return self._manifest.get("manifest", [path], lambda: dict(read_manifest(self.root).rows))

    def skips(self, jobs: list[JobLog]) -> dict[str, str]:
        """Session id -> why the newest job that read it skipped it (`jobs`: `list_jobs`).
        Each log is read again only when it changes: a running job's growing log alone, not
        every job's history."""
        skips: dict[str, str | None] = {}
        for job in jobs:  # oldest first: the newest job's word wins
            found = self._logs.get(str(job.path), [job.path], partial(skips_in_log, job.path))
            skips.update(found)
        return {session: why for session, why in skips.items() if why is not None}

    def sessions(self, jobs: list[JobLog] | None = None) -> list[JsonObject]:
        """Every session's row; `jobs` as `list_jobs` gives them, when the caller has them."""
        jobs = list_jobs(self.root) if jobs is None else jobs
        with self._listing:
            rows, skips = self.manifest_rows(), self.skips(jobs)
            return [
                session_row(session_id, self.session_files(session_id), rows.get(session_id), skips)
                for session_id in list_sessions(self.root)
            ]

    def session(self, session_id: str) -> JsonObject:
        """One session's row (the session page's header)."""
        files = self.session_files(session_id)
        skips = self.skips(list_jobs(self.root))
        return session_row(session_id, files, self.manifest_rows().get(session_id), skips)

    def warm(self) -> None:
        """Reads every session once (the server starts it in the background), so that the
        first look at the fleet page is as quick as the next."""
        self.sessions()
        self.models()

    def models(self) -> list[JsonObject]:
        checkpoints = Layout(self.root).checkpoints
        paths = [checkpoints, current_path(self.root)]
        records = self._models.get("models", paths, lambda: catalogue(self.root))
        pointer, _folder, _problems = read_current(self.root)
        current = pointer.get("id") if pointer is not None else None
        return model_rows(records, current)


def session_row(
    session_id: str, files: SessionFiles, row: ManifestRow | None, skips: dict[str, str]
) -> JsonObject:
    """One line of the fleet's session table."""
    seconds = None
    if row is not None:
        seconds = round(row.windows * TICK_MS / 1000, 1)
    elif files.first_ms is not None and files.last_ms is not None:
        seconds = round((files.last_ms - files.first_ms) / 1000, 1)
    if row is not None and row.windows:
        policy_share: float | None = round(row.autonomous_windows / row.windows, 3)
    elif files.commands:
        policy_share = round((files.policy_commands or 0) / files.commands, 3)
    else:
        policy_share = 0.0 if files.commands == 0 else None
    if files.problem is not None:
        state, why = "skipped", files.problem
    elif session_id in skips:
        state, why = "skipped", skips[session_id]
    elif row is not None:
        state, why = "decoded", None
    else:
        state, why = "new", "no job has read it yet"
    held_out = partition_of(session_id) is Partition.HELD_OUT
    return {
        "id": session_id,
        "rover": files.rover_id or (row.rover_id if row is not None else None),
        "date": files.started_at,
        "seconds": seconds,
        "commands": files.commands,
        "policyShare": policy_share,
        "partition": "held-out" if held_out else "training",
        "state": state,
        "why": why,
    }


def model_rows(records: list[ModelRecord], current: object) -> list[JsonObject]:
    """One line per published model, newest first, with how it drove in the field."""
    reports = field_reports(records)
    return [
        {
            **record.event_fields(),
            "canary": record.canary,
            "current": record.id == current,
            "field": field_of(reports, record.id),
        }
        for record in reversed(records)
    ]
