"""The launcher forwards pause signals to the ranks the elastic agent started, and to nothing
else (real child processes standing in for ranks; no torch)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import signal_pending
from rovertrain.job.launch import catches, launched_ranks, pause_forwarded

# A rank that handles the pause signals as JobControl does (a line per signal on stdout).
RANK = """
import signal, sys, time
def seen(number, frame):
    print(signal.Signals(number).name, flush=True)
signal.signal(signal.SIGTSTP, seen)
signal.signal(signal.SIGCONT, seen)
print("ready", flush=True)
time.sleep(60)
"""


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def at_rest(pid: int) -> str:
    """The process's state once it is not running (the suite's timeout is the safety net)."""
    while (now := state(pid)) == "R":
        time.sleep(0.001)
    return now


def child(command: list[str], rank: bool) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TORCHELASTIC_RUN_ID"}
    if rank:
        env["TORCHELASTIC_RUN_ID"] = "test"
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)


def test_pause_signals_reach_the_ranks_that_handle_them_and_no_other_child() -> None:
    rank = child([sys.executable, "-c", RANK], rank=True)
    starting = child(["sleep", "60"], rank=True)  # a rank before its handlers exist
    other = child(["sleep", "60"], rank=False)  # not a rank: must never be stopped
    try:
        assert rank.stdout is not None and rank.stdout.readline() == "ready\n"
        assert launched_ranks(os.getpid()) == sorted([rank.pid, starting.pid])
        assert catches(rank.pid, signal.SIGTSTP) and not catches(starting.pid, signal.SIGTSTP)
        before = signal.getsignal(signal.SIGTSTP)
        with pause_forwarded():
            os.kill(os.getpid(), signal.SIGTSTP)  # this process does not stop: it forwards
            assert rank.stdout.readline() == "SIGTSTP\n"
            os.kill(os.getpid(), signal.SIGCONT)
            assert rank.stdout.readline() == "SIGCONT\n"
        assert signal.getsignal(signal.SIGTSTP) == before
        # A SIGTSTP sent to them would still be pending, or would have stopped them once at
        # rest (a process taking a signal is running until it has stopped).
        for pid in (starting.pid, other.pid):
            assert at_rest(pid) != "T" and not signal_pending(pid, signal.SIGTSTP)
    finally:
        for process in (rank, starting, other):
            process.kill()
            process.wait()


def test_every_rank_reads_the_job_it_was_given() -> None:
    """job_document: what each rank parses is the job the launcher read, field for field."""
    import json

    from rovertrain.job.config import load_job_text
    from rovertrain.job.launch import job_document

    text = json.dumps({
        "root": "/data", "actionThreshold": 0.4, "steeringDeadband": 0.05, "seed": 3,
        "config": {"threads": 1, "maxJobSeconds": 60}, "gate": {"minPrecision": 0.3},
    })  # fmt: skip
    job = load_job_text(text)
    ranks_job = load_job_text(json.dumps(job_document(job, "job-7")))
    assert ranks_job.steeringDeadband == 0.05 and ranks_job.actionThreshold == 0.4
    assert ranks_job.config == job.config and ranks_job.gate == job.gate
    assert ranks_job.seed == 3 and ranks_job.jobId == "job-7"
