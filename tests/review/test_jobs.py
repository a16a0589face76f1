"""Which of a root's jobs runs, read without taking the root's lock; a log read by offset."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rovertrain.protocol.eventlog import flock_held
from rovertrain.review.jobs import MAX_READ_BYTES, list_jobs, read_chunk
from rovertrain.store.layout import Layout


def write_log(root: Path, job_id: str, *kinds: str, mtime: int) -> Path:
    folder = Layout(root).job(job_id).path
    folder.mkdir(parents=True)
    lines = [
        json.dumps({"kind": kind, "v": 1, "seq": n, "time": 0}) for n, kind in enumerate(kinds)
    ]
    path = folder / "events.ndjson"
    path.write_text("".join(line + "\n" for line in lines))
    os.utime(path, ns=(mtime, mtime))
    return path


@contextmanager
def root_locked(root: Path) -> Iterator[None]:
    Layout(root).training.mkdir(parents=True, exist_ok=True)
    with open(Layout(root).lock, "a+b") as stream:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
        yield


def test_the_running_job_is_the_newest_open_log_while_the_root_is_locked(tmp_path: Path) -> None:
    write_log(tmp_path, "job-a", "started", "complete", mtime=10**18)
    write_log(tmp_path, "job-b", "started", "progress", mtime=2 * 10**18)  # killed long ago
    write_log(tmp_path, "job-c", "started", "progress", mtime=3 * 10**18)
    states = {job.id: job.state for job in list_jobs(tmp_path)}
    assert states == {"job-a": "ended", "job-b": "interrupted", "job-c": "interrupted"}
    with root_locked(tmp_path):
        states = {job.id: job.state for job in list_jobs(tmp_path)}
    assert states == {"job-a": "ended", "job-b": "interrupted", "job-c": "running"}
    assert [job.id for job in list_jobs(tmp_path)] == ["job-a", "job-b", "job-c"]


def test_looking_never_takes_the_lock_a_starting_job_needs(tmp_path: Path) -> None:
    write_log(tmp_path, "job-a", "started", mtime=10**18)
    Layout(tmp_path).training.mkdir(exist_ok=True)
    Layout(tmp_path).lock.touch()
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            list_jobs(tmp_path)

    looker = threading.Thread(target=look)
    looker.start()
    try:
        for _ in range(300):  # a job's start: the exclusive lock, without waiting
            with open(Layout(tmp_path).lock, "a+b") as stream:
                fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                assert flock_held(Layout(tmp_path).lock)
    finally:
        stop.set()
        looker.join()
    assert not flock_held(Layout(tmp_path).lock)


def test_a_links_job_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_log(outside, "job-x", "started", mtime=10**18)
    root = tmp_path / "root"
    (Layout(root).training / "jobs").mkdir(parents=True)
    (Layout(root).training / "jobs" / "job-x").symlink_to(Layout(outside).job("job-x").path)
    assert list_jobs(root) == []


def test_a_log_is_read_in_whole_lines_and_a_dead_jobs_torn_line_is_passed(tmp_path: Path) -> None:
    path = write_log(tmp_path, "job-a", "started", "progress", mtime=10**18)
    with open(path, "ab") as stream:
        stream.write(b'{"kind": "progress", "v": 1, "seq": 2, "ti')  # torn
    live = read_chunk(path, 0, final=False)
    assert [event["kind"] for event in live.events] == ["started", "progress"]
    assert live.next_offset < live.size  # the torn line waits for its end
    again = read_chunk(path, live.next_offset, final=False)
    assert again.events == [] and again.next_offset == live.next_offset
    dead = read_chunk(path, live.next_offset, final=True)
    assert dead.events == [] and dead.next_offset == dead.size  # the page stops polling


def test_a_line_longer_than_a_read_is_passed_not_waited_for(tmp_path: Path) -> None:
    path = write_log(tmp_path, "job-a", "started", mtime=10**18)
    start = path.stat().st_size
    with open(path, "ab") as stream:
        stream.write(b"x" * (MAX_READ_BYTES + 10) + b"\n")
        stream.write(json.dumps({"kind": "complete"}).encode() + b"\n")
    offset, kinds = start, []
    for _ in range(5):
        chunk = read_chunk(path, offset, final=False)
        kinds += [event["kind"] for event in chunk.events]
        offset = chunk.next_offset
    assert kinds == ["complete"] and offset == path.stat().st_size
