"""Two (or more) real ranks in a gloo group on localhost, started with spawn, for unit tests."""

from __future__ import annotations

import datetime
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch.distributed as dist
import torch.multiprocessing as mp

from rovertrain.distributed.group import RankGroup
from rovertrain.distributed.rank_place import RankPlace


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def join(rank: int, ranks: int, port: int, timeout: float) -> RankGroup:
    """Join a gloo group the way RankGroup.join does under a launcher (env:// rendezvous)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    place = RankPlace(rank=rank, size=ranks)
    group = RankGroup(place, "gloo", timeout)
    dist.init_process_group(
        "gloo", rank=rank, world_size=ranks, timeout=datetime.timedelta(seconds=timeout)
    )
    group._control = dist.group.WORLD
    return group


def run_ranks(
    worker: Callable[..., Any],
    out: Path,
    *args: Any,
    ranks: int = 2,
    timeout: float = 120,
    others: float = 60,
) -> list[Any]:
    """Run `worker(rank, ranks, port, out, *args)` on each rank; each writes out/rank<N>.json.

    Rank 0 gets `timeout` seconds, the others `others` more once it ended; then they are killed.
    """
    port = free_port()
    context = mp.start_processes(
        worker, args=(ranks, port, out, *args), nprocs=ranks, join=False, start_method="spawn"
    )
    leader, *rest = context.processes
    leader.join(timeout)
    for process in rest:
        process.join(others)
    for process in context.processes:
        if process.is_alive():
            process.kill()
            process.join()
    return [
        json.loads((out / f"rank{rank}.json").read_text())
        if (out / f"rank{rank}.json").exists()
        else None
        for rank in range(ranks)
    ]


def write(out: Path, rank: int, value: Any) -> None:
    (out / f"rank{rank}.json").write_text(json.dumps(value))
