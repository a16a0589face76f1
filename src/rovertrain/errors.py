"""The one exception type that carries an `error` event's two faces."""

from __future__ import annotations

from typing import Any


class RovertrainError(Exception):
    """A failure with a stable machine code, a message for a person and a technical detail."""

    def __init__(self, code: str, message: str, detail: str | None = None, **extra: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail
        self.extra = extra

    def event_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"code": self.code, "message": self.message, **self.extra}
        if self.detail:
            fields["detail"] = self.detail
        return fields


class InvalidJob(RovertrainError):
    def __init__(self, pointer: str, message: str):
        super().__init__("invalid_job", f"{pointer or '/'}: {message}", pointer=pointer)
        self.pointer = pointer


class SkipSession(Exception):
    """A recording that cannot be used; the job goes on without it."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason
