"""`rovertrain inspect`: decode and window recordings without training."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.job.config import parse_job
from rovertrain.protocol.events import EventStream
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    from rovertrain.data.curation import Curation
    from rovertrain.data.dataset import DatasetRequest


def inspect_root(
    root_text: str, session_ids: tuple[str, ...], threads: int, stream: EventStream
) -> int:
    from rovertrain.data.curation import read_curation
    from rovertrain.data.dataset import Unwatched, build_dataset
    from rovertrain.data.recording import list_sessions
    from rovertrain.data.window_store.upkeep import commit_store
    from rovertrain.protocol.console import console_line

    root = Path(root_text).resolve()
    recordings = Layout(root).recordings
    if not recordings.is_dir():
        raise RovertrainError("root_unavailable", f"{root} has no recordings/ folder.")
    sessions = list(session_ids) or list_sessions(root)
    request = inspection_request(root, sessions, threads, read_curation(root))
    dataset = build_dataset(request, stream, Unwatched())
    if dataset.store is not None:  # what it decoded is ingested: a job will not decode it again
        commit_store(root, dataset.store, request.decoding.cacheMaxMegabytes * 2**20)
    stream.emit(
        "inspected",
        sessions=len(dataset.accepted),
        skipped=len(dataset.rejected),
        schema=dataset.schema,
        decodeSeconds=dataset.decode_seconds,
    )
    console_line(
        f"{'session':<28} {'partition':<9} {'windows':>8} {'usable':>7} "
        f"{'command':>8} {'stop':>5} {'codec':<6} {'decode s':>8}"
    )
    for row in dataset.rows():
        categories = row["categories"]
        console_line(
            f"{row['sessionId']:<28} {row['partition']:<9} {row['windows']:>8} "
            f"{row['usableWindows']:>7} {categories['command']:>8} {categories['stop']:>5} "
            f"{row.get('codec', '?'):<6} {row.get('decodeSeconds', 0):>8.2f}"
            + ("  (cached)" if row.get("cached") else "")
            + (f"  ({row['leftOutWindows']} left out)" if "leftOutWindows" in row else "")
        )
    for session_id, reason in dataset.rejected.items():
        console_line(f"{session_id:<28} skipped: {reason}")
    return ExitCode.COMPLETED


def inspection_request(
    root: Path, sessions: list[str], threads: int, curation: Curation | None = None
) -> DatasetRequest:
    """What `inspect` decodes: the sessions in the job's order with the job's decode limits,
    labelled with the initial schema, no windows kept (bench/bench_pipeline.py times it);
    the windows `curation` leaves out are counted apart from the usable ones."""
    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.data.curation import Curation
    from rovertrain.data.dataset import DatasetRequest
    from rovertrain.data.partition import processing_order
    from rovertrain.job.preflight import job_sessions

    job = parse_job({"root": str(root), "sessions": sessions, "config": {"threads": threads}})
    return DatasetRequest(
        root=root,
        sessions=processing_order(job_sessions(job), 0),
        schema=initial_schema(),
        seed=0,
        threads=job.config.execution.threads,
        decoding=job.config.decoding,
        sampling=job.config.sampling,
        keep_windows=False,
        curation=curation if curation is not None else Curation(),
    )
