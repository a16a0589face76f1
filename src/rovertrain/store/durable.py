"""Durable file operations: fsync'd writes, replacing a file whole, no-replace renames, the lock."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from rovertrain.contracts.errors import RovertrainError
from rovertrain.store.layout import Layout

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


@contextlib.contextmanager
def replacing(path: Path, *, durable: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; when the block succeeds, rename it over
    `path`, so readers see the old file or the new one, never a mix.

    The temporary, `.<name>.<pid>.tmp`, lies in the same folder (the rename stays on one file
    system; the leading dot and `.tmp` mark the leftovers of a killed writer). If the block
    raises, or the rename fails, the temporary is removed and `path` is left as it was.
    `durable=True` also fsyncs the new file before the rename and the folder after it, so the
    new content survives a power cut.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        if durable:
            fd = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(temporary, path)
        if durable:
            fsync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def atomic_replace(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, durably, so readers see the old or the new file.

    (`write_durably` already fsyncs the file; the helper's second fsync finds nothing to flush.)
    """
    with replacing(path, durable=True) as temporary:
        write_durably(temporary, data)


class JobLock:
    """An exclusive flock on `root/training/.lock`; the file itself is never deleted."""

    def __init__(self, root: Path):
        self.path = Layout(root).lock
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
