"""Fault injection: kills, signals, disk full, failing syscalls, lock contention."""

from __future__ import annotations

import fcntl
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import cli_env, signal_pending, write_job
from reliability.invariants import check_files, check_no_orphans, check_stream, snapshot
from rovertrain.job.resume import load_resume, resume_path

FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "stopGraceSeconds": 5, "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip
# The jobs whose checks are about writing (publication, the resume state, the lock) train a
# couple of steps: the files they write are the same size after 2 steps as after 20.
BRIEF = {**FAST, "maxStepsPerJob": 2}


class Job:
    """A `rovertrain run` whose HOME is an empty folder: a job writes nothing outside its root."""

    def __init__(self, job: Path, hooks: dict | None = None, preexec=None):
        self.home = job.parent.parent / f"home-{time.monotonic_ns()}"
        self.home.mkdir()
        env = {**cli_env(hooks), "HOME": str(self.home)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rovertrain", "run", "--job", str(job)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=preexec,
        )  # fmt: skip
        self.lines: list[bytes] = []

    def until(self, kind: str, timeout: float = 180) -> dict:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        for line in self.process.stdout:
            self.lines.append(line)
            event = json.loads(line)
            if event["kind"] == kind:
                return event
            assert time.monotonic() < deadline, f"no {kind} within {timeout} s"
        raise AssertionError(f"stream ended before {kind}: {self.lines[-1:]}")

    def finish(self, timeout: float = 180) -> tuple[int, list[dict], str]:
        rest, errors = self.process.communicate(timeout=timeout)
        events = check_stream(b"".join(self.lines) + rest)
        check_no_orphans(self.process.pid)
        assert not list(self.home.iterdir()), "the job wrote files outside its root"
        return self.process.returncode, events, errors.decode()


def until(condition: Callable[[], object], what: str, timeout: float = 120) -> None:
    """Poll `condition` until it holds; `timeout` is a safety net, never the assertion."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def run_ok(root: Path, **config) -> list[dict]:
    job = Job(write_job(root, **{**BRIEF, **config}))
    code, events, _ = job.finish()
    assert code == 0, events[-1]
    return events


def killed_during_publication(root: Path, rng: random.Random) -> None:
    before = snapshot(root)
    job = Job(write_job(root, **BRIEF), hooks={"slowWriteSeconds": 0.05})
    job.until("started")
    while (
        json.loads(job.lines[-1])["kind"] != "phase"
        or json.loads(job.lines[-1])["phase"] != "publish"
    ):
        job.until("phase")
    time.sleep(rng.uniform(0, 0.6))
    job.process.kill()
    job.process.communicate(timeout=60)
    check_stream(b"".join(job.lines))
    check_no_orphans(job.process.pid)
    check_files(root, before)
    # A later run removes the leftovers and runs.
    events = run_ok(root)
    assert events[-1]["trained"]
    assert not list((root / "training" / "checkpoints").glob(".*.pending"))


def test_sigkill_during_publication(synth_copy: Path) -> None:
    rng = random.Random(1)
    for _ in range(2):
        killed_during_publication(synth_copy, rng)


@pytest.mark.long
def test_sigkill_during_publication_looped(synth_copy: Path) -> None:
    rng = random.Random(2)
    for _ in range(50):
        killed_during_publication(synth_copy, rng)


def test_sigkill_during_resume_write_keeps_the_previous_state(synth_copy: Path) -> None:
    run_ok(synth_copy)
    previous = load_resume(synth_copy)
    assert previous is not None
    job = Job(write_job(synth_copy, **BRIEF), hooks={"slowWriteSeconds": 0.3})
    job.until("published")
    # Kill it while the new resume state is being written (slowly: 0.3 s a MiB).
    writing = f".{resume_path(synth_copy).name}.{job.process.pid}.tmp"
    until(lambda: (resume_path(synth_copy).parent / writing).exists(), "the resume write")
    job.process.kill()
    job.process.communicate(timeout=60)
    state = load_resume(synth_copy)
    steps = BRIEF["maxStepsPerJob"]
    assert state is not None and state["steps"] in (previous["steps"], previous["steps"] + steps)
    events = run_ok(synth_copy)
    assert events[-1]["steps"] == state["steps"] + steps


@pytest.mark.parametrize("phase", ["decode", "train", "evaluate", "publish"])
def test_sigterm_in_each_phase_ends_within_the_grace(synth_copy: Path, phase: str) -> None:
    before = snapshot(synth_copy)
    hooks = {"slowFrameSeconds": 0.002, "slowWriteSeconds": 0.05}
    # Training long enough for the signal to land in it; the later phases need only a few steps.
    steps = 60 if phase == "train" else 2
    job = Job(write_job(synth_copy, **{**FAST, "maxStepsPerJob": steps}), hooks=hooks)
    while True:
        event = job.until("phase")
        if event["phase"] == phase:
            break
    job.process.send_signal(signal.SIGTERM)
    _code, events, errors = job.finish()
    assert events[-1]["kind"] in ("complete", "error") and "Traceback" not in errors
    # Ended within the grace, by the job's own record (event times, wall-clock ms): the
    # signal came after the phase event. Start-up and teardown of the processes are not in it.
    assert (events[-1]["time"] - event["time"]) / 1000 < FAST["stopGraceSeconds"] + 3
    # Once publishing, the decision is already made and the atomic write simply finishes.
    if events[-1]["kind"] == "complete" and events[-1]["trained"] and phase != "publish":
        assert "Stopped by SIGTERM" in events[-1]["publication"]["reason"]
    check_files(synth_copy, before)


def wait_until_stuck_in_training(job: Job) -> None:
    """The first training step blocks (test hook); heartbeats say the job is in it."""
    while True:
        event = job.until("heartbeat")
        if event["phase"] == "train" and event["activity"].startswith("training step"):
            return


def test_second_signal_ends_a_stuck_job_at_once(synth_copy: Path) -> None:
    config = {**FAST, "stopGraceSeconds": 60, "heartbeatSeconds": 1}
    job = Job(write_job(synth_copy, **config), hooks={"stuckSeconds": 120})
    wait_until_stuck_in_training(job)
    job.process.send_signal(signal.SIGTERM)
    # Two signals pending at once would merge into one: send the second once the first landed.
    until(
        lambda: not signal_pending(job.process.pid, signal.SIGTERM), "the first SIGTERM delivered"
    )
    job.process.send_signal(signal.SIGTERM)
    # `interrupted` is the second signal's end alone: the 60 s grace would end it as
    # `stop_timeout`, and only after finish()'s 30 s safety net.
    code, events, _ = job.finish(timeout=30)
    assert code == 1 and events[-1]["code"] == "interrupted"


def test_stuck_call_is_ended_by_the_watchdog_after_the_grace(synth_copy: Path) -> None:
    config = {**FAST, "stopGraceSeconds": 3, "heartbeatSeconds": 1}
    job = Job(write_job(synth_copy, **config), hooks={"stuckSeconds": 120})
    wait_until_stuck_in_training(job)
    job.process.send_signal(signal.SIGTERM)
    code, events, _ = job.finish(timeout=30)  # a safety net: the grace is 3 s
    # The watchdog, not the stuck call (120 s), ended it: when it is done is JobControl's
    # (tests/job/test_control.py, on a clock advanced by hand).
    assert code == 1 and events[-1]["code"] == "stop_timeout"
    assert "did not stop within 3 s of the request" in events[-1]["message"]
    assert events[-2]["kind"] == "heartbeat" and events[-2]["phase"] == "train"


def test_disk_full_during_publication(synth_copy: Path) -> None:
    run_ok(synth_copy)  # fills the cache and leaves a first version
    before = snapshot(synth_copy)
    previous = load_resume(synth_copy)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    job = Job(write_job(synth_copy, **BRIEF), preexec=limit)
    code, events, _ = job.finish()
    assert code == 1 and events[-1]["code"] == "disk_full"
    check_files(synth_copy, before)
    assert not list((synth_copy / "training" / "checkpoints").glob(".*.pending"))
    assert load_resume(synth_copy)["steps"] == previous["steps"]


@pytest.mark.parametrize("hook", ["failFsync", "failRename"])
def test_failing_fsync_or_rename_publishes_nothing(synth_copy: Path, hook: str) -> None:
    job = Job(write_job(synth_copy, **BRIEF), hooks={hook: True})
    code, events, _ = job.finish()
    assert code == 1 and events[-1]["code"] == "write_failed"
    directory = synth_copy / "training" / "checkpoints"
    assert not [p for p in directory.iterdir()] if directory.exists() else True
    assert not resume_path(synth_copy).exists()


def test_stale_staging_of_a_live_job_is_left_alone(synth_copy: Path) -> None:
    staging = synth_copy / "training" / "checkpoints" / ".live.pending"
    staging.mkdir(parents=True)
    with open(synth_copy / "training" / ".lock", "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        job = Job(write_job(synth_copy, **BRIEF))
        code, events, _ = job.finish()
        assert code == 75 and events[-1]["code"] == "locked"
        assert staging.exists()
    events = run_ok(synth_copy)
    assert events[0]["removedStaging"] == [".live.pending"] and not staging.exists()


def test_missing_root_fails_before_any_decoding(cli, tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"root": str(tmp_path / "absent"), "sessions": ["a"]}))
    result = cli("run", "--job", str(job))
    assert result.code == 1 and result.kinds() == ["error"]
    assert result.last()["code"] == "root_unavailable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_root_fails_before_any_decoding(cli, synth_copy: Path) -> None:
    synth_copy.chmod(0o555)
    try:
        result = cli("run", "--job", str(write_job(synth_copy, **FAST)))
    finally:
        synth_copy.chmod(0o755)
    assert result.code == 1 and result.last()["code"] == "root_unavailable"


def test_closed_stdout_stops_the_job_quietly(synth_copy: Path) -> None:
    job = Job(write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000}))
    job.until("progress")
    assert job.process.stdout is not None
    job.process.stdout.close()
    code = job.process.wait(timeout=60)
    errors = job.process.stderr.read().decode() if job.process.stderr else ""
    assert code == 141 and "Traceback" not in errors
    check_no_orphans(job.process.pid)
    check_files(synth_copy, {})


def test_two_jobs_at_once_exactly_one_runs(synth_copy: Path) -> None:
    job_path = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 5})
    for _ in range(3):
        jobs = [Job(job_path), Job(job_path)]
        results = [job.finish() for job in jobs]
        codes = sorted(code for code, _events, _ in results)
        assert codes == [0, 75], [r[1][-1] for r in results]


@pytest.mark.long
def test_two_jobs_at_once_looped(synth_copy: Path) -> None:
    job_path = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 1, "passesPerJob": 1})
    for _ in range(50):
        jobs = [Job(job_path), Job(job_path)]
        codes = sorted(job.finish()[0] for job in jobs)
        assert codes == [0, 75]


def test_threads_and_priority(synth_copy: Path) -> None:
    job = Job(write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000, "threads": 2}))
    job.until("progress")
    job.until("progress")
    pid = job.process.pid
    busy = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
        nice, cpu_ticks = int(fields[16]), int(fields[11]) + int(fields[12])
        assert nice == 10, f"thread {task} runs at nice {nice}"
        busy += cpu_ticks > 50
    job.process.send_signal(signal.SIGTERM)
    job.finish()
    assert busy <= 2, f"{busy} threads did heavy work with threads=2"


def test_a_reader_that_stops_reading_does_not_stretch_the_budget(synth_copy: Path) -> None:
    import threading

    config = {**FAST, "maxStepsPerJob": 100000, "maxJobSeconds": 10, "evalEverySteps": 1}
    job = Job(write_job(synth_copy, **config))
    ended: list[int] = []
    waiter = threading.Thread(target=lambda: ended.append(job.process.wait()))
    waiter.start()
    # Nobody reads stdout meanwhile. The job must end by itself: 120 s is a safety net (its
    # budget and grace are 15 s); how long it ran is asserted on its own clock below.
    waiter.join(timeout=120)
    assert ended, "the job outlived its budget while its reader stalled"
    code, events, errors = job.finish()
    assert code in (0, 1) and "Traceback" not in errors
    # By the job's own clock, which starts after the interpreter's imports (seconds under load):
    # the budget and the grace, not a second more.
    assert events[-1]["kind"] == "complete", (events[-1], errors[-2000:])
    assert events[-1]["elapsedSeconds"] <= 10 + FAST["stopGraceSeconds"], events[-1]
