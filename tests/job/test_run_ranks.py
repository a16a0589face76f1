"""One job on two ranks on this machine (gloo, localhost): `rovertrain run --nproc 2`, and two
torchrun launchers forming a two-node job through a c10d rendezvous.

Each run starts three Python processes that import torch on 2 shared cores: about a minute
each, so all of them are slow; tests/distributed and tests/learn/test_train_ranks.py run real
gloo ranks in the default suite.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import cli_env, parse_events, read_paused_heartbeats, write_job
from rovertrain.learn.policy import VERSION

RESUME_FILE = f"resume-v{VERSION}.pt"  # the resume state of this policy version

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 2, "batchSize": 16, "threads": 1, "rankTimeoutSeconds": 60}  # fmt: skip
SLOWER = {**FAST, "maxStepsPerJob": 100_000, "passesPerJob": 10_000}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def checkpoints(root: Path) -> list[Path]:
    directory = root / "training" / "checkpoints"
    if not directory.exists():
        return []
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def held_out_figures_of(root: Path, job_path: Path, checkpoint: Path) -> dict[str, Any]:
    """A single-process evaluation of the published weights on the same job's held-out set."""
    from safetensors.torch import load_file

    from rovertrain.data.dataset import DatasetRequest, Unwatched, build_dataset
    from rovertrain.data.partition import processing_order
    from rovertrain.job import evaluation as ev
    from rovertrain.job.config import load_job_file
    from rovertrain.job.preflight import job_sessions, with_sessions
    from rovertrain.job.state import TrainingState
    from rovertrain.learn.policy import Policy
    from rovertrain.protocol.events import EventStream

    job = with_sessions(load_job_file(str(job_path)), root)
    order = processing_order(job_sessions(job), job.seed)
    schema = TrainingState.fresh().schema
    config = job.config
    request = DatasetRequest(
        root, order, schema, job.seed, config.execution.threads, config.decoding,
        config.sampling,
    )  # fmt: skip
    dataset = build_dataset(request, EventStream(None), Unwatched())
    model = Policy()
    model.load_state_dict(load_file(checkpoint / "weights.safetensors"))
    scoring = ev.scoring_for(job, dataset)
    return ev.gate_evaluation(model, dataset, job, scoring, lambda: False).to_json()


def run_ranks(
    job: Path, *extra: str, timeout: float = 900, hooks: dict[str, Any] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(job), *extra],
        capture_output=True, timeout=timeout, env=cli_env(hooks),
    )  # fmt: skip
    assert completed.stderr is not None
    return completed.returncode, parse_events(completed.stdout)


def test_two_ranks_share_the_work_and_rank_0_alone_reports_and_publishes(
    synth_copy: Path,
) -> None:
    job = write_job(synth_copy, **FAST)
    code, events = run_ranks(job, "--nproc", "2")
    assert code == 0
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "complete"
    assert events[0]["ranks"] == 2
    assert kinds.count("started") == 1 and kinds.count("ranks") == 1
    (ranks,) = [e["ranks"] for e in events if e["kind"] == "ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert len({r["pid"] for r in ranks}) == 2
    decoded = [set(r["decodedSessions"]) for r in ranks]
    assert not decoded[0] & decoded[1]
    sessions = {e["sessionId"] for e in events if e["kind"] == "dataset"}
    assert decoded[0] | decoded[1] == sessions and len(sessions) == 5
    assert all(decoded)  # five sessions, two ranks: both decoded some
    complete = events[-1]
    assert complete["trained"] and complete["steps"] == 20
    assert all(r["steps"] == 20 for r in ranks)
    assert sum(r["examples"] for r in ranks) == complete["examples"] == 20 * 16
    sampled = sum(e["sampled"] for e in events if e["kind"] == "dataset")
    assert sum(r["sampledWindows"] for r in ranks) == sampled
    (checkpoint,) = checkpoints(synth_copy)
    assert checkpoint.name == complete["published"]["id"]
    assert (synth_copy / "training" / RESUME_FILE).exists()
    log = synth_copy / "training" / "jobs" / complete["jobId"] / "events.ndjson"
    assert parse_events(log.read_text()) == events
    # Held-out figures: exactly a single-process evaluation of the same weights.
    alone = held_out_figures_of(synth_copy, job, checkpoint)
    assert alone["windows"] > 0
    assert complete["evaluation"] == alone


def test_resume_crosses_world_sizes(cli, synth_copy: Path) -> None:
    job = write_job(synth_copy, **FAST)
    first = cli("run", "--job", str(job))
    assert first.code == 0 and first.last()["steps"] == 20
    code, events = run_ranks(job, "--nproc", "2")
    assert code == 0 and events[-1]["steps"] == 40 and events[-1]["examples"] == 40 * 16
    # Everything was in the cache: no rank decoded anything.
    (ranks,) = [e["ranks"] for e in events if e["kind"] == "ranks"]
    assert all(r["decodedSessions"] == [] for r in ranks)
    assert all(e["diagnostics"]["cached"] for e in events if e["kind"] == "dataset")
    back = cli("run", "--job", str(job))
    assert back.code == 0 and back.last()["steps"] == 60
    saved = torch.load(synth_copy / "training" / RESUME_FILE, weights_only=True)
    assert saved["steps"] == 60


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                text = Path(f"/proc/{current}/task/{task}/children").read_text()
            except OSError:
                continue
            for child in map(int, text.split()):
                if child not in found:
                    found.add(child)
                    pending.append(child)
    return found


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found.update(map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split()))
    return found


def rank_pid(launcher: int, rank: int) -> int:
    """The rank the launcher started (its child), not one of that rank's own children (the
    multiprocessing resource tracker inherits RANK too)."""
    for pid in children(launcher):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ:
            return pid
    raise AssertionError(f"no rank {rank} under the launcher")


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def start_ranks(job: Path, hooks: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(job), "--nproc", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=cli_env(hooks),
    )  # fmt: skip


def until_progress(process: subprocess.Popen[bytes], kind: str = "progress") -> list[bytes]:
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if json.loads(line)["kind"] == kind:
            return lines
    raise AssertionError(f"no {kind} event")


def nothing_published_and_lock_released(root: Path) -> None:
    assert checkpoints(root) == []
    assert not (root / "training" / RESUME_FILE).exists()
    with open(root / "training" / ".lock", "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released


def no_process_left(pids: set[int]) -> None:
    deadline = time.monotonic() + 60  # a safety net: they are normally gone already
    while alive(pids):
        assert time.monotonic() < deadline, f"processes left behind: {alive(pids)}"
        time.sleep(0.1)


def test_sigterm_to_the_launcher_stops_both_ranks_with_one_terminal_event(
    synth_copy: Path,
) -> None:
    job = write_job(synth_copy, **SLOWER)
    process = start_ranks(job)
    lines = until_progress(process)
    family = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    complete = events[-1]
    assert complete["kind"] == "complete" and process.returncode == 0, complete
    assert complete["trained"] and complete["promote"] is False
    assert "Stopped by SIGTERM" in complete["publication"]["reason"]
    (ranks,) = [e["ranks"] for e in events if e["kind"] == "ranks"]
    assert ranks[0]["steps"] == ranks[1]["steps"] == complete["steps"]
    no_process_left(family)


def test_killing_rank_1_ends_the_job_with_rank_failed(synth_copy: Path) -> None:
    job = write_job(synth_copy, **SLOWER)
    process = start_ranks(job)
    lines = until_progress(process)
    family = descendants(process.pid)
    os.kill(rank_pid(process.pid, 1), signal.SIGKILL)
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    error = events[-1]
    assert error["kind"] == "error" and error["code"] == "rank_failed", error
    assert process.returncode == 1
    nothing_published_and_lock_released(synth_copy)
    no_process_left(family)


def test_a_nan_loss_on_rank_1_ends_the_job_as_one_process_would(synth_copy: Path) -> None:
    job = write_job(synth_copy, **FAST)
    code, events = run_ranks(job, "--nproc", "2", hooks={"nanLossOnRank": 1})
    error = events[-1]
    assert error["kind"] == "error" and error["code"] == "non_finite_loss", error
    assert error["detail"] == "step 1: gradient norm nan"  # rank 0 failed at the same step
    assert code == 1 and [e["kind"] for e in events].count("started") == 1
    nothing_published_and_lock_released(synth_copy)


def test_sigtstp_to_the_launcher_pauses_both_ranks_and_sigcont_resumes_them(
    synth_copy: Path,
) -> None:
    job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 60, "heartbeatSeconds": 1})
    process = start_ranks(job)
    lines = until_progress(process)
    process.send_signal(signal.SIGTSTP)
    lines += until_progress(process, "paused")
    # Paused until two heartbeats said so; the launcher itself forwards and keeps running.
    lines += read_paused_heartbeats(process, 2)
    assert alive({process.pid}) and "T" not in Path(f"/proc/{process.pid}/stat").read_text()[-60:]
    process.send_signal(signal.SIGCONT)
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    kinds = [e["kind"] for e in events]
    assert kinds.count("paused") == kinds.count("resumed") == 1
    (paused,) = [e for e in events if e["kind"] == "paused"]
    (resumed,) = [e for e in events if e["kind"] == "resumed"]
    beats = [e for e in events if e["kind"] == "heartbeat" and e["paused"]]
    assert len(beats) >= 2 and resumed["phase"] == "train"
    # The budget clock stood still for as long as the pause lasted (event times: wall ms).
    assert {b["elapsedSeconds"] for b in beats} == {paused["elapsedSeconds"]}
    assert resumed["pausedSeconds"] >= (beats[-1]["time"] - paused["time"]) / 1000 - 0.01
    complete = events[-1]
    assert complete["kind"] == "complete" and process.returncode == 0, complete
    assert complete["steps"] == 60  # paused, not stopped: every step was taken
    (ranks,) = [e["ranks"] for e in events if e["kind"] == "ranks"]
    assert ranks[0]["steps"] == ranks[1]["steps"] == 60


@pytest.mark.parametrize("how", ["SIGSTOP", "stuck in a step"])
def test_a_hung_rank_ends_the_job_with_rank_failed_within_the_rank_timeout(
    synth_copy: Path, how: str
) -> None:
    timeout = 10
    config = {**SLOWER, "rankTimeoutSeconds": timeout, "stopGraceSeconds": 5}
    job = write_job(synth_copy, **config)
    # Stuck: rank 1 blocks in the agreement of its second step (after the first progress).
    process = start_ranks(job, {"stuckOnRank": 1} if how != "SIGSTOP" else None)
    lines = until_progress(process) if how == "SIGSTOP" else []
    family = descendants(process.pid)
    if how == "SIGSTOP":
        os.kill(rank_pid(process.pid, 1), signal.SIGSTOP)  # alive, holding its sockets, silent
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    error = events[-1]
    assert error["kind"] == "error" and error["code"] == "rank_failed", error
    assert process.returncode == 1
    # What ended it: rank 0's collective, timed out at rankTimeoutSeconds (gloo says so).
    waited = rf"seen by rank 0 of 2: .*Timed out waiting {timeout * 1000}ms for \w+ operation"
    assert re.search(waited, error["detail"]), error["detail"]
    if how != "SIGSTOP":
        # It hung at its first step: rank 0 wrote no progress and failed a timeout later.
        kinds = [e["kind"] for e in events]
        assert "progress" not in kinds and "phase" in kinds
        (train,) = [e for e in events if e.get("phase") == "train"]
        assert (error["time"] - train["time"]) / 1000 >= timeout
    nothing_published_and_lock_released(synth_copy)
    # The agent SIGTERMs the hung rank: a stuck one is ended by its watchdog after the grace;
    # a stopped one cannot act and is SIGKILLed 30 s later.
    no_process_left(family)


def test_under_a_bare_torchrun_a_dead_rank_0_leaves_no_terminal_event_and_fails(
    synth_copy: Path,
) -> None:
    job = write_job(synth_copy, **SLOWER)
    log = synth_copy.parent / "torchrun.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
         "--nproc-per-node=2", "--max-restarts=0", "-m", "rovertrain", "run", "--job", str(job)],
        stdout=subprocess.PIPE, stderr=log.open("wb"), env=cli_env(),
    )  # fmt: skip
    lines = until_progress(process)
    family = descendants(process.pid)
    os.kill(rank_pid(process.pid, 0), signal.SIGKILL)
    rest, _ = process.communicate(timeout=300)
    events = parse_events(b"".join(lines) + rest)
    assert not {e["kind"] for e in events} & {"complete", "error"}  # what a supervisor sees
    assert process.returncode != 0
    stderr = log.read_text()
    assert "[rank_failed] seen by rank 1 of 2" in stderr  # the survivor says what happened
    assert re.search(r"Root Cause.*?\brank\s*:\s*0\b", stderr, re.S), stderr[-3000:]  # torchrun
    nothing_published_and_lock_released(synth_copy)
    no_process_left(family)


def test_two_launchers_form_a_two_node_job_through_c10d(synth_copy: Path) -> None:
    job = write_job(synth_copy, **FAST)
    endpoint = f"127.0.0.1:{free_port()}"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2",
                "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}",
                "--rdzv-id=two-nodes", "--max-restarts=0"]  # fmt: skip
    command = [*torchrun, "-m", "rovertrain", "run", "--job", str(job)]
    logs = [synth_copy.parent / f"node{node}.log" for node in range(2)]
    nodes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log.open("wb"), env=cli_env())
        for log in logs
    ]
    outputs = [node.communicate(timeout=900)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], logs[0].read_text()[-3000:]
    streams = [parse_events(out) for out in outputs]
    (events,) = [stream for stream in streams if stream]  # rank 0's node alone writes events
    assert events[0]["ranks"] == 2 and events[-1]["kind"] == "complete"
    assert events[-1]["trained"] and events[-1]["steps"] == 20
    (checkpoint,) = checkpoints(synth_copy)
    assert checkpoint.name == events[-1]["published"]["id"]


@pytest.mark.timeout(2400)
def test_default_synth_job_on_two_ranks_passes_the_imitation_gate(cli, tmp_path: Path) -> None:
    root = tmp_path / "root"
    made = cli("synth", "--out", str(root), "--sessions", "12", "--minutes", "2", "--seed", "7",
               timeout=900)  # fmt: skip
    assert made.code == 0, made.stderr
    job = json.loads((root / "job.json").read_text())
    job["config"]["threads"] = 1
    path = root / "job-ranks.json"
    path.write_text(json.dumps(job))
    code, events = run_ranks(path, "--nproc", "2", timeout=1800)
    assert code == 0
    evaluation = events[-1]["evaluation"]
    assert evaluation["status"] == "passed imitation gate", evaluation.get("gateReasons")
