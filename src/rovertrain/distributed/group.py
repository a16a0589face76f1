"""The job's process group: collectives that either answer or end the job with `rank_failed`.

Control messages (stop, pause, budget, dataset figures) always travel over a gloo group on the
CPU; the gradients travel over the main group (gloo on the CPU, NCCL on CUDA) inside DDP.
Every collective is bounded by the group's timeout: a rank that died or hangs makes the others
fail within it, and that failure becomes the `rank_failed` error on rank 0.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.distributed.rank_place import RankPlace

T = TypeVar("T")

# Words of the errors gloo, NCCL and the c10d store raise when a peer is gone or silent.
RANK_FAILURE_MARKERS = (
    "gloo",
    "nccl",
    "connection",
    "timed out",
    "timeout",
    "broken pipe",
    "peer",
    "socket",
    "store",
)
RANK_FAILED = (
    "A rank of the job died or stopped answering within config.rankTimeoutSeconds; "
    "the job ended and nothing was published."
)


def is_rank_failure(error: BaseException) -> bool:
    """Whether a RuntimeError from torch.distributed means a lost rank, not a bug of ours."""
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(word in text for word in RANK_FAILURE_MARKERS)


def rank_failed(error: BaseException, place: RankPlace) -> RovertrainError:
    """The error, its detail naming the rank that saw it (the other ranks say it on stderr)."""
    seen = f"seen by rank {place.rank} of {place.size}: {type(error).__name__}: {error}"
    return RovertrainError(ErrorCode.RANK_FAILED, RANK_FAILED, seen[:4000])


class RankGroup:
    """The ranks of one job; for one process there is no group and collectives are identities."""

    def __init__(self, place: RankPlace, backend: str | None = None, timeout_seconds: float = 300):
        self.place = place
        self.backend = backend
        self.timeout = datetime.timedelta(seconds=timeout_seconds)
        self._control: Any = None

    @classmethod
    def join(cls, place: RankPlace, device: torch.device, timeout_seconds: float) -> RankGroup:
        """Join the ranks the launcher started (env:// rendezvous: MASTER_ADDR, MASTER_PORT)."""
        if not place.distributed:
            return cls(place)
        backend = "nccl" if device.type == "cuda" else "gloo"
        group = cls(place, backend, timeout_seconds)
        with group.guard():
            dist.init_process_group(
                backend, rank=place.rank, world_size=place.size, timeout=group.timeout
            )
            group._control = (
                dist.new_group(backend="gloo", timeout=group.timeout)
                if backend != "gloo"
                else dist.group.WORLD
            )
        return group

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Turn a lost rank, wherever it surfaces (a collective, DDP's backward), into
        `rank_failed`; any other error passes unchanged."""
        try:
            yield
        except RovertrainError:
            raise
        except RuntimeError as error:
            if self.place.distributed and is_rank_failure(error):
                raise rank_failed(error, self.place) from None
            raise

    def all_max(self, values: list[float]) -> list[float]:
        """Element-wise maximum over the ranks (a flag set anywhere is set everywhere)."""
        if not self.place.distributed:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64)
        with self.guard():
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self._control)
        return [float(value) for value in tensor.tolist()]

    def all_sum(self, values: list[float]) -> list[float]:
        if not self.place.distributed:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64)
        with self.guard():
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=self._control)
        return [float(value) for value in tensor.tolist()]

    def gather(self, value: T) -> list[T]:
        """Every rank's `value` (picklable), in rank order, on every rank."""
        if not self.place.distributed:
            return [value]
        gathered: list[Any] = [None] * self.place.size
        with self.guard():
            dist.all_gather_object(gathered, value, group=self._control)
        return gathered

    def from_leader(self, value: T) -> T:
        """Rank 0's `value` on every rank."""
        if not self.place.distributed:
            return value
        box: list[Any] = [value]
        with self.guard():
            dist.broadcast_object_list(box, src=0, group=self._control)
        result: T = box[0]
        return result

    def close(self) -> None:
        if self.place.distributed and dist.is_initialized():
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
