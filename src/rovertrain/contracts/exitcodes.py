"""Process exit codes: the one place that decides them (documented in the README)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    COMPLETED = 0
    """The command finished; for `run`, a `complete` event was written (gate passed or not)."""
    FAILED = 1
    """The job failed; an `error` event was written."""
    USAGE = 2
    """Invalid invocation, job file or curation file (`error` with code `invalid_job`, `usage`
    or `invalid_curation`)."""
    LOCKED = 75
    """The data root is locked by another job (EX_TEMPFAIL): retry later."""
    SUPERVISOR_GONE = 141
    """stdout was closed by the reader; the job stopped as on SIGTERM (128 + SIGPIPE)."""


# Error codes whose exit status is not the generic FAILED.
_CODE_EXITS = {
    "invalid_job": ExitCode.USAGE,
    "usage": ExitCode.USAGE,
    "invalid_curation": ExitCode.USAGE,
    "locked": ExitCode.LOCKED,
}


def exit_code_for_error(code: str) -> ExitCode:
    return _CODE_EXITS.get(code, ExitCode.FAILED)
