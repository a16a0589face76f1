"""Before the first step: CPU budget, lifecycle control, the job's log, the announcement."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rovertrain import __version__
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl
from rovertrain.job.settings import Budget
from rovertrain.protocol.events import EventStream

NICENESS = 10


class JobWatcher(Protocol):
    """Someone watching a job beside the event stream (the live progress view)."""

    def __call__(self, event: dict[str, Any]) -> None: ...
    def show_decoding(self, decoding: dict[str, int]) -> None: ...


def new_job_id() -> str:
    """A job without a jobId is named by its UTC start time and a random suffix."""
    return f"job-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"


def job_control(budget: Budget, stream: EventStream, watchers: Sequence[JobWatcher]) -> JobControl:
    control = JobControl(
        stream,
        max_seconds=budget.maxJobSeconds,
        grace=budget.stopGraceSeconds,
        max_paused=budget.maxPausedSeconds,
        heartbeat_seconds=budget.heartbeatSeconds,
    )
    control.decoding_watchers.extend(watcher.show_decoding for watcher in watchers)
    stream.on_reader_gone = lambda: control.request_stop("Supervisor gone (stdout closed)")
    control.install()
    return control


def open_job_log(job_dir: Path, stream: EventStream, watchers: Sequence[JobWatcher]) -> None:
    """The job's replay log and evidence files, then whoever watches live."""
    from rovertrain.protocol.eventlog import keep_previous_log
    from rovertrain.protocol.evidence import EvidenceWriter

    keep_previous_log(job_dir)
    stream.mirror_to(job_dir / "events.ndjson")
    stream.listeners.append(EvidenceWriter(job_dir))
    stream.listeners.extend(watchers)


def announce(
    job: Job, root: Path, stream: EventStream, removed_staging: list[str], ranks: int = 1
) -> None:
    stream.emit(
        "started",
        version=__version__,
        root=str(root),
        config=job.config.to_json(),
        gate=job.gate.to_json(),
        seed=job.seed,
        sessions=len(job.sessions or ()),
        removedStaging=removed_staging,
        pid=os.getpid(),
        ranks=ranks,
    )


def limit_cpu(threads: int) -> None:
    """Yield the CPU to the rover's media processes, before any thread pool exists."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)
    current = os.nice(0)
    if current < NICENESS:
        os.nice(NICENESS - current)
    import torch

    torch.set_num_threads(threads)
    # Raises when already set in this process (several jobs in one interpreter).
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
