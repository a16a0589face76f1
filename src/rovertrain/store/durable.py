"""Durable file operations: fsync'd writes, no-replace renames, the job lock."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
from pathlib import Path
from typing import IO

from rovertrain.errors import RovertrainError

RENAME_NOREPLACE = 1
AT_FDCWD = -100


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """Write a new file and fsync it (the caller renames it into place)."""
    with open(path, "xb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())


def rename_no_replace(source: Path, target: Path) -> None:
    """Rename that fails if `target` exists in any form (file, folder, even empty, link)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:  # pragma: no cover - glibc < 2.28
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "target exists", str(target))
        os.rename(source, target)
        return
    result = renameat2(
        AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(target), RENAME_NOREPLACE
    )
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(target))


def atomic_replace(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a mix."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_durably(temporary, data)
        os.replace(temporary, path)
        fsync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


class JobLock:
    """An exclusive flock on `root/training/.lock`; the file itself is never deleted."""

    def __init__(self, root: Path):
        self.path = root / "training" / ".lock"
        self.stream: IO[bytes] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        stream = open(self.path, "ab")  # noqa: SIM115 - held for the job's lifetime
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stream.close()
            raise RovertrainError(
                "locked",
                f"Another job is running on {self.path.parent.parent}; retry later.",
            ) from None
        self.stream = stream

    def release(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None


def disk_error(error: OSError, what: str) -> RovertrainError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return RovertrainError("disk_full", f"No space left while writing the {what}.", str(error))
    return RovertrainError(
        "write_failed", f"Could not write the {what}: {error.strerror}.", str(error)
    )
