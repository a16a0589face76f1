"""Checks of a job against the disk, before anything is decoded or written."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.recording import list_sessions, session_directory
from rovertrain.job.config import Job
from rovertrain.store.layout import Layout


def check_root_usable(root: Path) -> None:
    if not root.exists():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} is not a folder.")
    layout = Layout(root)
    training = layout.training
    target = training if training.exists() else root
    if not os.access(target, os.W_OK | os.X_OK):
        raise RovertrainError(
            "root_unavailable", f"The data root {target} is not writable by this user."
        )
    if not layout.recordings.is_dir():
        raise RovertrainError(
            "root_unavailable", f"The data root {root} has no recordings/ folder."
        )


def with_sessions(job: Job, root: Path) -> Job:
    """The job with its session list: as given, or every session under root/recordings."""
    if job.sessions is not None:
        return job
    return replace(job, sessions=tuple(list_sessions(root)))


def job_sessions(job: Job) -> tuple[str, ...]:
    if job.sessions is None:
        raise ValueError("the job's sessions are not resolved yet (with_sessions)")
    return job.sessions


def validate_job_offline(job: Job) -> JsonObject:
    """What a job template says, checked against the schema only (no root needed)."""
    return {
        **({"jobId": job.jobId} if job.jobId else {}),
        "root": str(job.root),
        "sessions": len(job.sessions or ()),
        "allSessions": job.sessions is None,
        "offline": True,
        "config": job.config.to_json(),
        "gate": job.gate.to_json(),
    }


def validate_job_on_disk(job: Job) -> JsonObject:
    root = job.root.resolve()
    check_root_usable(root)
    job = with_sessions(job, root)
    missing = {}
    for session_id in job_sessions(job):
        try:
            session_directory(root, session_id)
        except SkipSession as skip:
            missing[session_id] = skip.reason
    if missing:
        first = next(iter(missing))
        raise RovertrainError(
            "missing_sessions",
            f"{len(missing)} session(s) cannot be used, first {first}: {missing[first]}",
            sessions=missing,
        )
    return {
        **({"jobId": job.jobId} if job.jobId else {}),
        "root": str(root),
        "sessions": len(job_sessions(job)),
        "allSessions": False,
        "config": job.config.to_json(),
        "gate": job.gate.to_json(),
    }
