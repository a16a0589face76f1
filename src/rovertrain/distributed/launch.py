"""`rovertrain run --job J --nproc N`: N ranks on this machine through PyTorch's launcher.

The launcher is torch.distributed.run (torchrun) with a standalone c10d rendezvous on a free
local port; each rank is `python -m rovertrain run --job <copy>` and finds its place in the
environment torchrun sets. The ranks inherit the real stdout: rank 0 writes the job's one
NDJSON stream there, the others write no events. When no rank wrote a terminal event (rank 0
itself died or was killed), the launcher ends the stream with `error` `rank_failed`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rovertrain.errors import ErrorCode
from rovertrain.exitcodes import ExitCode, exit_code_for_error
from rovertrain.job.config import Job
from rovertrain.job.startup import new_job_id
from rovertrain.protocol.events import TERMINAL_KINDS, EventStream
from rovertrain.store.layout import Layout

NO_TERMINAL = (
    "A rank of the job died or was killed before rank 0 could end the job; nothing was published."
)


def job_document(job: Job, job_id: str) -> dict[str, Any]:
    """The job as every rank reads it: the same settings, the root made absolute, the id set."""
    document: dict[str, Any] = {
        "root": str(job.root.resolve()),
        "actionThreshold": job.actionThreshold,
        "config": job.config.to_json(),
        "gate": job.gate.to_json(),
        "jobId": job_id,
        "seed": job.seed,
    }
    if job.sessions is not None:
        document["sessions"] = list(job.sessions)
    return document


def torchrun_arguments(job_path: Path, nproc: int, progress: bool | None) -> list[str]:
    shown = [] if progress is None else ["--progress" if progress else "--no-progress"]
    return [
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        "--module",
        "rovertrain",
        "run",
        "--job",
        str(job_path),
        *shown,
    ]


@contextlib.contextmanager
def real_stdout(events_fd: int | None) -> Iterator[None]:
    """fd 1 is the event stream again while the ranks start (they inherit it), then stderr."""
    if events_fd is None:
        yield
        return
    os.dup2(events_fd, 1)
    try:
        yield
    finally:
        os.dup2(2, 1)


def last_event(log: Path) -> dict[str, Any] | None:
    try:
        lines = log.read_bytes().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict):
                return event
    return None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns


def launch_local(job: Job, nproc: int, stream: EventStream, progress: bool | None) -> int:
    """Run the job on `nproc` local ranks; the exit code of its terminal event."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    job_id = job.jobId or new_job_id()
    log = Layout(job.root.resolve()).job(job_id).events
    before = _identity(log)
    failure = ""
    with tempfile.TemporaryDirectory(prefix="rovertrain-ranks-") as directory:
        job_path = Path(directory) / "job.json"
        job_path.write_text(json.dumps(job_document(job, job_id)))
        arguments = get_args_parser().parse_args(torchrun_arguments(job_path, nproc, progress))
        with real_stdout(stream.fd):
            try:
                run(arguments)  # type: ignore[no-untyped-call]
            except (ChildFailedError, SignalException) as error:
                failure = f"{type(error).__name__}: {error}"[:4000]
    last = last_event(log) if _identity(log) != before else None
    if last is not None and last.get("kind") in TERMINAL_KINDS:
        if last["kind"] == "complete":
            return ExitCode.COMPLETED
        return exit_code_for_error(str(last.get("code")))
    # Rank 0 never ended the stream: end it here, numbered after its last event.
    stream.bind_job(job_id)
    if last is not None:
        stream.continue_after(int(last.get("seq", -1)))
        stream.mirror_to(log)
    stream.emit("error", code=ErrorCode.RANK_FAILED, message=NO_TERMINAL, detail=failure)
    return ExitCode.FAILED
