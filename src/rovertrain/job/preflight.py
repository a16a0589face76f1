"""Checks of a job against the disk, before anything is decoded or written."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.data.curation import Curation, read_curation
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


def with_curation(job: Job, root: Path) -> Job:
    """The job with the root's curation.json, read once, here: a write while the job runs is
    the next job's. An invalid file ends the job before anything is decoded
    (`invalid_curation`)."""
    if job.curation is not None:
        return job
    return replace(job, curation=read_curation(root))


def job_curation(job: Job) -> Curation:
    if job.curation is None:
        raise ValueError("the job's curation is not read yet (with_curation)")
    return job.curation


CURATION_SESSIONS_SHOWN = 20


def curation_summary(curation: Curation, root: Path) -> JsonObject:
    """`validate-job`'s account of curation.json: its entries, the sessions they name, and
    those of them the root lacks (reported, not refused: a session may have been deleted)."""
    named = curation.sessions()
    missing: list[JsonValue] = [*sorted(named - set(list_sessions(root)))]
    return {
        "entries": len(curation.entries),
        "sessions": len(named),
        "missingSessions": len(missing),
        "missingSessionIds": missing[:CURATION_SESSIONS_SHOWN],
    }


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
    job = with_curation(with_sessions(job, root), root)
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
        "curation": curation_summary(job_curation(job), root),
    }
