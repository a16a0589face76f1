"""Failures and their stable codes: the `error` event's and the `skipped` event's two faces."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Stable `error` codes (README, schemas/events.schema.json). Values never change."""

    INVALID_JOB = "invalid_job"
    USAGE = "usage"
    LOCKED = "locked"
    ROOT_UNAVAILABLE = "root_unavailable"
    MISSING_SESSIONS = "missing_sessions"
    NOT_FOUND = "not_found"
    RESUME_INCOMPATIBLE = "resume_incompatible"
    NON_FINITE_LOSS = "non_finite_loss"
    NON_FINITE_WEIGHTS = "non_finite_weights"
    DISK_FULL = "disk_full"
    WRITE_FAILED = "write_failed"
    PUBLISH_CONFLICT = "publish_conflict"
    INTERRUPTED = "interrupted"
    STOP_TIMEOUT = "stop_timeout"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    JOB_NOT_RUNNING = "job_not_running"
    MISSING_DEPENDENCY = "missing_dependency"
    SELF_TEST_FAILED = "self_test_failed"
    UNSUPPORTED_PLATFORM = "unsupported_platform"
    INTERNAL = "internal"
    INVALID_CHECKPOINT = "invalid_checkpoint"
    EXPORT_MISMATCH = "export_mismatch"
    RANK_FAILED = "rank_failed"
    INVALID_CURATION = "invalid_curation"


class RovertrainError(Exception):
    """A failure with a stable machine code, a message for a person and a technical detail."""

    def __init__(self, code: str, message: str, detail: str | None = None, **extra: Any):
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.detail = detail
        self.extra = extra

    def event_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"code": self.code.value, "message": self.message, **self.extra}
        if self.detail:
            fields["detail"] = self.detail
        return fields


class InvalidJob(RovertrainError):
    def __init__(self, pointer: str, message: str):
        super().__init__(ErrorCode.INVALID_JOB, f"{pointer or '/'}: {message}", pointer=pointer)
        self.pointer = pointer


class SkipSession(Exception):
    """A recording that cannot be used; the job goes on without it."""

    def __init__(self, code: str, reason: str, detail: str | None = None):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.detail = detail


def require_packages(modules: Sequence[str], needed_by: str, extra: str) -> None:
    """Every module importable, or one `missing_dependency` error naming the missing ones and
    the extra that installs them (`pip install 'rovertrain[EXTRA]'`)."""
    missing = []
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise RovertrainError(
            "missing_dependency",
            f"{needed_by} needs {', '.join(missing)}: pip install 'rovertrain[{extra}]'.",
        )
