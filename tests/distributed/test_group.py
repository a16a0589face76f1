"""Collectives, agreement and lost ranks between two real gloo ranks on localhost."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import torch.distributed as dist
from gloo import join, run_ranks, write

from fake_clock import FakeClock
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.job.agreement import STOPPED_ELSEWHERE, AgreedControl
from rovertrain.job.control import JobControl
from rovertrain.protocol.events import EventStream


def _collectives(rank: int, ranks: int, port: int, out: Path) -> None:
    group = join(rank, ranks, port, timeout=60)
    clock = FakeClock()  # each rank its own, moved only by its waits while paused
    stream = EventStream(None, clock=clock)
    control = JobControl(stream, max_seconds=100, grace=5, max_paused=100)
    agreed = AgreedControl(control, group)
    if rank == 1:  # SIGTSTP on rank 1, SIGCONT half a second later on its clock
        control.pause_requested = True
        clock.after(0.5, lambda: setattr(control, "pause_requested", False))
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
            "waits": len(clock.slept),
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
    # Both ranks waited, agreeing in step, for as long as rank 1 was paused (0.5 s).
    assert zero["waits"] == one["waits"] and 5 <= one["waits"] <= 6
    assert zero["pausedSeconds"] == one["pausedSeconds"]
    assert 0.5 <= one["pausedSeconds"] <= 0.6 + 1e-9
    assert zero["stop"] == STOPPED_ELSEWHERE
    assert one["stop"] == "Stopped by SIGTERM"


def _lost_rank(rank: int, ranks: int, port: int, out: Path, how: str) -> None:
    group = join(rank, ranks, port, timeout=3)
    group.all_max([0.0])
    if rank == 1:
        if how == "dies":
            os._exit(9)
        threading.Event().wait()  # hangs, alive: never answers the next collective
    try:
        group.all_max([1.0])
        write(out, rank, ["answered", ""])
    except RovertrainError as error:
        write(out, rank, [error.code.value, error.detail])
    os._exit(0)


def test_a_rank_that_dies_fails_the_next_collective_with_rank_failed(tmp_path: Path) -> None:
    (code, _), _ = run_ranks(_lost_rank, tmp_path, "dies")
    assert code == ErrorCode.RANK_FAILED


def test_a_rank_that_hangs_fails_the_collective_at_the_timeout(tmp_path: Path) -> None:
    (code, detail), _ = run_ranks(_lost_rank, tmp_path, "hangs", others=0)
    assert code == ErrorCode.RANK_FAILED
    # Ended by the group's 3 s timeout (gloo says so), not by the peer going away.
    assert re.search(r"Timed out waiting 3000ms for \w+ operation", detail), detail
