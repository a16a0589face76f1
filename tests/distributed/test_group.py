"""Collectives, agreement and lost ranks between two real gloo ranks on localhost."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import torch.distributed as dist
from gloo import join, run_ranks, write

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.job.agreement import STOPPED_ELSEWHERE, AgreedControl
from rovertrain.job.control import JobControl
from rovertrain.protocol.events import EventStream


def _collectives(rank: int, ranks: int, port: int, out: Path) -> None:
    group = join(rank, ranks, port, timeout=60)
    control = JobControl(EventStream(None), max_seconds=100, grace=5, max_paused=100)
    agreed = AgreedControl(control, group)
    if rank == 1:  # SIGTSTP on rank 1, SIGCONT half a second later
        control.pause_requested = True
        threading.Timer(0.5, lambda: setattr(control, "pause_requested", False)).start()
    agreed.safe_point()
    paused = control.paused_total
    if rank == 1:
        control.request_stop("Stopped by SIGTERM")
    agreed.safe_point()
    write(
        out,
        rank,
        {
            "max": group.all_max([float(rank), -float(rank)]),
            "sum": group.all_sum([1.0, float(rank)]),
            "gathered": group.gather({"rank": rank}),
            "leader": group.from_leader(f"from rank {rank}"),
            "stop": control.stop_reason,
            "pausedSeconds": paused,
            "elapsedAgreed": agreed.elapsed() >= control.elapsed() - 1e-6 or rank == 0,
        },
    )
    dist.destroy_process_group()


def test_collectives_and_a_pause_and_a_stop_on_one_rank_reaching_the_other(tmp_path: Path) -> None:
    zero, one = run_ranks(_collectives, tmp_path)
    for result in (zero, one):
        assert result["max"] == [1.0, 0.0]
        assert result["sum"] == [2.0, 1.0]
        assert result["gathered"] == [{"rank": 0}, {"rank": 1}]
        assert result["leader"] == "from rank 0"
        assert result["pausedSeconds"] > 0  # both ranks waited while rank 1 was paused
    assert zero["stop"] == STOPPED_ELSEWHERE
    assert one["stop"] == "Stopped by SIGTERM"


def _lost_rank(rank: int, ranks: int, port: int, out: Path, how: str) -> None:
    group = join(rank, ranks, port, timeout=3)
    group.all_max([0.0])
    if rank == 1:
        if how == "dies":
            os._exit(9)
        time.sleep(30)  # hangs: never answers the next collective
        os._exit(0)
    try:
        group.all_max([1.0])
        write(out, rank, "answered")
    except RovertrainError as error:
        write(out, rank, error.code.value)
    os._exit(0)


def test_a_rank_that_dies_fails_the_next_collective_with_rank_failed(tmp_path: Path) -> None:
    zero, _ = run_ranks(_lost_rank, tmp_path, "dies")
    assert zero == ErrorCode.RANK_FAILED


def test_a_rank_that_hangs_fails_the_collective_at_the_timeout(tmp_path: Path) -> None:
    zero, _ = run_ranks(_lost_rank, tmp_path, "hangs", others=0)
    assert zero == ErrorCode.RANK_FAILED
