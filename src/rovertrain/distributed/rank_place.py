"""Who this process is in a distributed job, read from the launcher's environment. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class RankPlace:
    """This process's place among the job's ranks (torchrun's RANK, WORLD_SIZE, LOCAL_RANK)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def leads(self) -> bool:
        """Rank 0 alone holds the lock, writes the events, evaluates and publishes."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


ONE_PROCESS = RankPlace()


def rank_place_from_env(env: Mapping[str, str]) -> RankPlace:
    """This process's place as torchrun (or `rovertrain run --nproc`) described it; one
    process without it.

    A launcher of one process (WORLD_SIZE=1) is the plain single-process job.
    """
    try:
        size = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local_rank = int(env.get("LOCAL_RANK", "0"))
    except ValueError:
        return ONE_PROCESS
    if size <= 1 or not 0 <= rank < size:
        return ONE_PROCESS
    return RankPlace(rank=rank, size=size, local_rank=local_rank)
