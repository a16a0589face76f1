"""Run lifecycle and live evidence: heartbeats, pause/resume, replay, CSVs, report, supervisor."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    REPO,
    cli_env,
    parse_events,
    read_paused_heartbeats,
    read_until,
    signal_after_progress,
    start_run,
    write_job,
)
from rovertrain.protocol.evidence import GrowingCsv

FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip


def test_heartbeat_during_a_slow_phase(cli, synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**FAST, "heartbeatSeconds": 1})
    result = cli("run", "--job", str(job), hooks={"slowPhaseSeconds": 3.5})
    assert result.code == 0
    kinds = result.kinds()
    train_start = next(i for i, e in enumerate(result.events) if e.get("phase") == "train")
    first_progress = kinds.index("progress")
    beats = result.events[train_start + 1 : first_progress]
    # 3.5 s of silence at 1 s heartbeats: at least two, all saying the phase is training.
    assert len([b for b in beats if b["kind"] == "heartbeat"]) >= 2
    assert all(b["phase"] == "train" for b in beats if b["kind"] == "heartbeat")


def test_pause_resume_shifts_the_budget_and_evidence_is_written(synth_copy: Path) -> None:
    # Steps end the job on a quiet machine; the budget leaves a loaded one room to get there.
    budget = 60
    config = {**FAST, "maxStepsPerJob": 40, "maxJobSeconds": budget, "evalEverySteps": 10}
    config["heartbeatSeconds"] = 1
    job = write_job(synth_copy, **config)
    process = start_run(job)
    lines = read_until(process, "progress")
    process.send_signal(signal.SIGTSTP)
    lines += read_until(process, "paused")
    # Paused until two heartbeats said so: time passes, on the job's own clock, while paused.
    lines += read_paused_heartbeats(process, 2)
    process.send_signal(signal.SIGCONT)
    rest, _ = process.communicate(timeout=120)
    events = parse_events(b"".join(lines) + rest)
    kinds = [e["kind"] for e in events]
    assert kinds.count("paused") == kinds.count("resumed") == 1 and kinds[-1] == "complete"
    (paused,) = [e for e in events if e["kind"] == "paused"]
    (resumed,) = [e for e in events if e["kind"] == "resumed"]
    beats = [e for e in events if e["kind"] == "heartbeat" and e["paused"]]
    assert len(beats) >= 2 and all(b["phase"] == "train" for b in beats)
    # The budget clock stood still while paused ...
    assert {b["elapsedSeconds"] for b in beats} == {paused["elapsedSeconds"]}
    assert resumed["elapsedSeconds"] == pytest.approx(paused["elapsedSeconds"], abs=0.01)
    # ... for as long as the pause lasted, by the events' own timestamps (ms, wall clock) ...
    paused_for = resumed["pausedSeconds"]
    assert (beats[-1]["time"] - paused["time"]) / 1000 - 0.01 <= paused_for
    assert paused_for <= (resumed["time"] - paused["time"]) / 1000 + 0.01
    # ... and only then: from the pause to the end, budget time = wall time - paused time.
    complete = events[-1]
    wall = (complete["time"] - paused["time"]) / 1000
    used = complete["elapsedSeconds"] - paused["elapsedSeconds"]
    assert used == pytest.approx(wall - paused_for, abs=0.25) and paused_for > 0.5
    # The budget is kept in budget time, which the pause did not use.
    assert complete["elapsedSeconds"] <= budget + 2
    job_dir = synth_copy / "training" / "jobs" / complete["jobId"]
    rows = list(csv.DictReader((job_dir / "training_log.csv").open()))
    assert [int(r["step"]) for r in rows] == [e["steps"] for e in events if e["kind"] == "progress"]
    evals = list(csv.DictReader((job_dir / "checkpoint_evals.csv").open()))
    assert evals and "heldOutLoss" in evals[0] and float(evals[0]["f1"]) >= 0
    assert len(evals) == len([e for e in events if e["kind"] == "evaluation"])


def test_max_paused_seconds_stops_gracefully(synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000, "maxPausedSeconds": 2})
    returncode, events = signal_after_progress(job, signal.SIGTSTP, timeout=120)
    assert returncode == 0 and events[-1]["kind"] == "complete"
    assert "Paused longer than maxPausedSeconds" in events[-1]["publication"]["reason"]


def test_events_follow_prints_each_event_once_in_order(synth_copy: Path, cli) -> None:
    job = write_job(synth_copy, **FAST)
    process = start_run(job)
    first = read_until(process, "started")
    job_id = json.loads(first[0])["jobId"]
    job_dir = synth_copy / "training" / "jobs" / job_id
    follower = subprocess.run(
        [sys.executable, "-m", "rovertrain", "events", str(job_dir), "--follow"],
        capture_output=True, timeout=300, env=cli_env(),
    )  # fmt: skip
    rest, _ = process.communicate(timeout=300)
    direct = parse_events(b"".join(first) + rest)
    followed = parse_events(follower.stdout)
    assert follower.returncode == 0
    assert followed == direct
    replayed = cli("events", str(job_dir))
    assert replayed.events == direct


def test_csv_header_grows_without_losing_rows(tmp_path: Path) -> None:
    log = GrowingCsv(tmp_path / "log.csv", ("step",))
    log.append({"step": 1, "loss": 0.5})
    log.append({"step": 2, "loss": 0.4, "kl": 0.1})
    log.append({"step": 3})
    rows = list(csv.DictReader((tmp_path / "log.csv").open()))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    assert rows[0]["kl"] == "" and rows[1]["kl"] == "0.1" and rows[0]["loss"] == "0.5"
    reopened = GrowingCsv(tmp_path / "log.csv", ("step",))
    reopened.append({"step": 4, "kl": 0.2})
    assert len(list(csv.DictReader((tmp_path / "log.csv").open()))) == 4


def test_report_renders_a_png_from_a_real_run(cli, synth_copy: Path, tmp_path: Path) -> None:
    result = cli("run", "--job", str(write_job(synth_copy, **{**FAST, "evalEverySteps": 10})))
    job_dir = synth_copy / "training" / "jobs" / result.last()["jobId"]
    out = tmp_path / "dash.png"
    report = cli("report", str(job_dir), "--out", str(out))
    assert report.code == 0, report.stderr
    (event,) = report.events
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (event["width"], event["height"]) == (1400, 900)
    assert "imitation gate" in report.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_supervisor_classifies_outcomes(synth_copy: Path, tmp_path: Path) -> None:
    script = REPO / "examples" / "supervisor" / "supervise.js"
    command = f"{sys.executable} -m rovertrain"

    def supervise(job: Path, *extra: str) -> dict:
        completed = subprocess.run(
            ["node", str(script), "--rovertrain", command, *extra, str(job)],
            capture_output=True, timeout=300, env=cli_env(), cwd=REPO,
        )  # fmt: skip
        return json.loads(completed.stdout.decode().strip().splitlines()[-1])

    done = supervise(write_job(synth_copy, **{**FAST, "maxStepsPerJob": 2}))  # the outcome
    assert done["outcome"] == "completed" and done["exitCode"] == 0
    long_job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000})
    stopped = supervise(
        long_job, "--pause-after", "12", "--resume-after", "14", "--stop-after", "18"
    )
    assert stopped["outcome"] == "completed" and stopped["exitCode"] == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"root": "/nonexistent", "sessions": []}')
    failed = supervise(bad)
    assert failed["outcome"] == "failed" and failed["error"] == "root_unavailable"


def test_progress_view_can_be_forced_on(cli, synth_copy: Path) -> None:
    result = cli("run", "--job", str(write_job(synth_copy, **FAST)), "--progress")
    assert result.code == 0
    assert "sessions" in result.stderr and "training" in result.stderr and "loss" in result.stderr
    quiet = cli("run", "--job", str(write_job(synth_copy, **FAST)))
    assert "ex/s" not in quiet.stderr


def child_states(pid: int) -> list[str]:
    from reliability.invariants import children_of

    states = []
    for child in children_of(pid):
        with open(f"/proc/{child}/stat") as stream:
            states.append(stream.read().rsplit(")", 1)[1].split()[0])
    return states


def until(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {what}")


def stopped_children(pid: int) -> list[str] | None:
    """The children's states once some are stopped and none runs, else None."""
    states = child_states(pid)
    return states if "T" in states and "R" not in states else None


def test_pause_during_decode_stops_the_decoder_children(synth_copy: Path) -> None:
    # The decode is what counts: two decoder children (threads 2), slowed down enough to pause.
    job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 2, "threads": 2})
    process = start_run(job, hooks={"slowFrameSeconds": 0.01})
    lines = read_until(process, "phase")
    until(lambda: len(child_states(process.pid)) >= 2, "decoder children started")
    process.send_signal(signal.SIGTSTP)
    lines += read_until(process, "paused")
    stopped = until(lambda: stopped_children(process.pid), "decoder children stopped")
    process.send_signal(signal.SIGCONT)
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    # Every decoder child (and the resource tracker, which is asleep) is stopped or idle.
    assert "T" in stopped and "R" not in stopped, stopped
    assert events[-1]["kind"] == "complete" and "resumed" in [e["kind"] for e in events]


def run_on_a_terminal(job: Path, hooks: dict) -> tuple[list[dict], str]:
    """Run with stderr on a pseudo-terminal, as a person would see it; stdout stays a pipe."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(job)],
        stdout=subprocess.PIPE, stderr=slave, env={**cli_env(hooks), "TERM": "xterm"},
    )  # fmt: skip
    os.close(slave)
    screen = bytearray()

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    stdout, _ = process.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    assert process.returncode == 0
    return parse_events(stdout), screen.decode(errors="replace")


def test_decode_heartbeats_and_progress_show_each_active_session(synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**FAST, "heartbeatSeconds": 1, "threads": 2})  # two decoders
    events, screen = run_on_a_terminal(job, {"slowFrameSeconds": 0.01})
    beats = [e for e in events if e["kind"] == "heartbeat" and e["phase"] == "decode"]
    beats = [beat for beat in beats if beat.get("decoding")]
    assert beats, "no heartbeat named the sessions being decoded"
    assert any(frames > 0 for beat in beats for frames in beat["decoding"].values())
    assert "decoding drive-" in beats[-1]["activity"]
    # On a terminal the live view has a bar per session being decoded, then the training line.
    decoded = [sid for beat in beats for sid in beat["decoding"]]
    assert any(f"  {sid}" in screen for sid in decoded), screen[-2000:]
    assert "training" in screen and "ex/s" in screen
