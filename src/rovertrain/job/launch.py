"""`rovertrain run --job J --nproc N`: N ranks on this machine through PyTorch's launcher.

The launcher is torch.distributed.run (torchrun) with a standalone c10d rendezvous on a free
local port; each rank is `python -m rovertrain run --job <copy>` and finds its place in the
environment torchrun sets. The ranks inherit the real stdout: rank 0 writes the job's one
NDJSON stream there, the others write no events. When no rank wrote a terminal event (rank 0
itself died or was killed), the launcher ends the stream with `error` `rank_failed`. SIGTSTP
and SIGCONT to the launcher are forwarded to the ranks: pause works as with one process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from rovertrain.contracts.errors import ErrorCode
from rovertrain.contracts.exitcodes import ExitCode, exit_code_for_error
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
        **job.decision.to_json(),
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


PAUSE_SIGNALS = (signal.SIGTSTP, signal.SIGCONT)
RANK_ENVIRONMENT = b"TORCHELASTIC_RUN_ID="  # set by the elastic agent for the ranks it starts


def launched_ranks(launcher: int) -> list[int]:
    """The ranks the elastic agent started under `launcher`: its children whose environment
    names the agent's run (any other child keeps the default action of a pause signal: stop)."""
    ranks = []
    for pid in sorted(_children(launcher)):
        try:
            environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(entry.startswith(RANK_ENVIRONMENT) for entry in environment):
            ranks.append(pid)
    return ranks


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found.update(map(int, text.split()))
    return found


def catches(pid: int, number: int) -> bool:
    """Whether process `pid` has a handler for signal `number` (SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (number - 1) & 1)
    return False


@contextlib.contextmanager
def pause_forwarded() -> Iterator[None]:
    """SIGTSTP and SIGCONT to this launcher reach every rank, as they reach a one-process job.

    The agent starts each rank in a session of its own, so a pause meant for the job (a
    supervisor's signal to the launcher, ^Z on a terminal) would otherwise never reach the
    ranks; and the launcher itself must not stop: it keeps watching its ranks. A rank that
    gets SIGTSTP pauses every rank at their next agreement (job/agreement.py).
    """

    def forward(number: int, _frame: FrameType | None) -> None:
        for pid in launched_ranks(os.getpid()):
            # A rank still starting (no handler yet) would be stopped by the kernel: skip it;
            # any rank that pauses pauses them all.
            if number == signal.SIGTSTP and not catches(pid, number):
                continue
            with contextlib.suppress(OSError):
                os.kill(pid, number)

    previous = {number: signal.signal(number, forward) for number in PAUSE_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


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
        with real_stdout(stream.fd), pause_forwarded():
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
