"""The job's ranks: one process by default; under a launcher, rank 0 leads and the others help.

run.py calls these at its steps. With one process every call is what the single-process job
always did (no process group, the whole batch, the CPU). With several ranks:
- every rank decodes a size-balanced shard of the sessions the shared window store lacks into it,
  then reads (labels, samples, gathers) a disjoint shard of the sessions the job reads; the
  outcomes are exchanged and every rank applies them all in the job's order, so every rank
  holds the dataset one process would build;
- every rank trains on its share of each global batch under DistributedDataParallel, with
  stop, pause and budget agreed at each step;
- rank 0 alone holds the lock, writes the events, evaluates, publishes and saves the resume
  state; the other ranks leave after the last training step.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rovertrain.contracts.errors import ErrorCode, InvalidJob, RovertrainError
from rovertrain.contracts.json_types import JsonObject
from rovertrain.distributed.rank_place import ONE_PROCESS, RankPlace, rank_place_from_env
from rovertrain.distributed.shard import batch_share, shard_sessions
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl
from rovertrain.job.settings import Execution
from rovertrain.protocol.events import EventStream

if TYPE_CHECKING:
    import torch

    from rovertrain.data.dataset import Dataset, DatasetRequest
    from rovertrain.distributed.group import RankGroup
    from rovertrain.learn.losses import LossSetup
    from rovertrain.learn.policy import Policy
    from rovertrain.learn.train import BatchShare, TrainingControl, TrainResult
    from rovertrain.store.durable import JobLock


def resolve_device(setting: str, place: RankPlace) -> torch.device:
    """`config.device` to a torch device: one GPU per local rank on CUDA."""
    import torch

    if setting == "cpu":
        return torch.device("cpu")
    available = torch.cuda.is_available()
    if setting == "auto" and not available:
        return torch.device("cpu")
    if not available:
        raise InvalidJob("/config/device", "is cuda, but torch sees no CUDA device here")
    count = torch.cuda.device_count()
    if place.local_rank >= count:
        # NCCL needs a GPU of its own for every rank.
        raise InvalidJob(
            "/config/device",
            f"is cuda, but local rank {place.local_rank} has no GPU of its own ({count} here)",
        )
    return torch.device("cuda", place.local_rank)


@dataclass
class RankShare:
    """A rank's share of each global batch (learn.train.BatchShare), on its device; counts
    the examples it handed out (the loop asks once per step)."""

    rank: int
    ranks: int
    device: torch.device
    examples: int = 0

    def __call__(self, count: int) -> slice:
        part = batch_share(count, self.rank, self.ranks)
        self.examples += part.stop - part.start
        return part


@dataclass
class RankReport:
    """What one rank did: the `ranks` event's entry for it."""

    rank: int
    host: str
    pid: int
    device: str
    decodedSessions: list[str] = field(default_factory=list)
    decodeSeconds: float = 0.0
    steps: int = 0
    examples: int = 0
    trainingSeconds: float = 0.0

    def to_json(self, windows: int) -> JsonObject:
        rate = self.examples / self.trainingSeconds if self.trainingSeconds > 0 else 0.0
        return {
            **dataclasses.asdict(self),
            "sampledWindows": windows,
            "examplesPerSecond": round(rate, 2),
        }


class NoLock:
    """What a rank other than 0 holds instead of the root lock."""

    def acquire(self) -> None:
        pass

    def release(self) -> None:
        pass


class Ranks:
    def __init__(self, place: RankPlace, group: RankGroup | None, device: torch.device):
        self.rank_place = place
        self.group = group
        self.device = device
        self.report = RankReport(place.rank, socket.gethostname(), os.getpid(), str(device))
        self._share: RankShare | None = None

    @property
    def leads(self) -> bool:
        return self.rank_place.leads

    @property
    def size(self) -> int:
        return self.rank_place.size

    # -- start ------------------------------------------------------------------------------
    def agree_job(self, job: Job, job_id: str) -> tuple[Job, str]:
        """Rank 0's job id, session list and curation on every rank (each rank read the root
        itself; a file written in between must not split the ranks' datasets)."""
        if self.group is None:
            return job, job_id
        job_id, sessions, curation = self.group.from_leader((job_id, job.sessions, job.curation))
        return dataclasses.replace(job, sessions=sessions, curation=curation), job_id

    def root_lock(self, root: Path) -> JobLock | NoLock:
        """The root's job lock on rank 0; a lock that locks nothing on the others."""
        from rovertrain.store.durable import JobLock

        return JobLock(root) if self.leads else NoLock()

    def started(self) -> None:
        """The other ranks start decoding once rank 0 holds the lock and has cleaned up."""
        if self.group is not None:
            self.group.all_max([0.0])

    @contextmanager
    def guard(self) -> Iterator[None]:
        """A lost rank anywhere inside (DDP's backward included) becomes `rank_failed`."""
        if self.group is None:
            yield
            return
        with self.group.guard():
            yield

    # -- decode -----------------------------------------------------------------------------
    def decode_shard(self, request: DatasetRequest, control: JobControl) -> DatasetRequest:
        """Every rank decodes its shard of the sessions the shared window store lacks; then
        the request every rank builds the same dataset from (the store, and the failures)."""
        if self.group is None:
            return request
        from rovertrain.data.dataset import DecodedByRanks, decode_into_store, unstored_sessions
        from rovertrain.job.agreement import DecodeAgreement

        pending = unstored_sessions(request) if self.leads else []
        shards = self.group.from_leader(shard_sessions(pending, self.size))
        mine = shards[self.rank_place.rank]
        watcher = DecodeAgreement(control, self.group)
        started = time.monotonic()
        failures = decode_into_store(dataclasses.replace(request, sessions=mine), watcher)
        self.report.decodedSessions = sorted(set(mine) - set(failures))
        self.report.decodeSeconds = round(time.monotonic() - started, 3)
        watcher.wait_for_all()
        every: dict[str, tuple[str, str]] = {}
        for found in self.group.gather(failures):
            every.update(found)
        decoded = frozenset(session for shard in shards for session in shard) - set(every)
        return dataclasses.replace(
            request,
            decoded=DecodedByRanks(decoded, every),
            maintains_store=self.leads,
            exchange=RankExchange(self.rank_place.rank, self.size, self.group),
        )

    def agree_dataset(self, dataset: Dataset, control: JobControl) -> None:
        """A stop on any rank while the dataset was built stops every rank; otherwise every
        rank must hold the same pool (they trained on different data otherwise)."""
        if self.group is None:
            return
        shape = [float(len(dataset.training)), float(len(dataset.held_out))]
        stop, *largest = self.group.all_max([float(control.should_stop()), *shape])
        if stop:
            if not control.stop_requested():
                control.request_stop("Stop requested on another rank")
            return
        if largest != shape or self.group.all_max([-value for value in shape]) != [
            -value for value in shape
        ]:
            raise RovertrainError(
                ErrorCode.INTERNAL,
                "The ranks built different datasets from the same window store; this is a bug.",
                f"rank {self.rank_place.rank}: pool {shape[0]:g}, held out {shape[1]:g}",
            )

    # -- train ------------------------------------------------------------------------------
    def share(self) -> BatchShare:
        """This rank's part of each batch: the whole of it for one process."""
        if self.group is None:
            from rovertrain.learn.train import WholeBatch

            return WholeBatch(self.device)
        self._share = RankShare(self.rank_place.rank, self.size, self.device)
        return self._share

    def place(self, model: Policy, optimizer: torch.optim.Optimizer, setup: LossSetup) -> LossSetup:
        """Model, optimizer state and loss weights on this rank's device (a no-op on the CPU)."""
        if self.device.type == "cpu":
            return setup
        model.to(self.device)
        # Loading its own state moves the optimizer's moments to the parameters' device.
        optimizer.load_state_dict(optimizer.state_dict())
        return dataclasses.replace(
            setup,
            numeric_mask=setup.numeric_mask.to(self.device),
            positive_weight=setup.positive_weight.to(self.device),
            slot_mask=setup.slot_mask.to(self.device),
            level_values=None if setup.level_values is None else setup.level_values.to(self.device),
            level_known=None if setup.level_known is None else setup.level_known.to(self.device),
        )

    def to_cpu(self, model: Policy, optimizer: torch.optim.Optimizer) -> None:
        """After training: evaluation, the probe and publication work on the CPU."""
        if self.device.type != "cpu":
            model.to("cpu")
            optimizer.load_state_dict(optimizer.state_dict())

    def wrapped(self, model: Policy) -> Policy:
        """The policy under DistributedDataParallel: gradients averaged over the ranks."""
        if self.group is None:
            return model
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [self.device.index] if self.device.type == "cuda" else None
        with self.guard():
            ddp = DistributedDataParallel(model, device_ids=device_ids)
        # The loop calls the policy and reads its parameters; DDP forwards both.
        return cast("Policy", ddp)

    def agreed(self, control: JobControl) -> TrainingControl:
        if self.group is None:
            return control
        from rovertrain.job.agreement import AgreedControl

        return AgreedControl(control, self.group)

    def leader_decides(self, predicate: Callable[[], bool]) -> Callable[[], bool]:
        """Rank 0's answer on every rank (convergence: rank 0 alone measures the selection
        set); asked once per step by the loop, so it is one small all-reduce per step."""
        if self.group is None:
            return predicate
        group, leads = self.group, self.leads
        return lambda: bool(group.all_max([float(leads and predicate())])[0])

    def lead_only(self, callback: Callable[[int], None]) -> Callable[[int], None]:
        """Periodic and selection evaluations: rank 0's (the others wait at their next step's
        agreement)."""
        return callback if self.leads else (lambda steps: None)

    def trained(self, stream: EventStream, dataset: Dataset, result: TrainResult) -> None:
        """Rank 0 emits what every rank did (`ranks`), gathered from all of them."""
        if self.group is None:
            return
        self.report.steps = result.steps
        self.report.examples = self._share.examples if self._share is not None else 0
        self.report.trainingSeconds = result.seconds
        reports = self.group.gather(self.report)
        sampled = {row.session_id: row.sampled_windows for row in dataset.sessions}
        stream.emit(
            "ranks",
            ranks=[
                report.to_json(sum(sampled.get(s, 0) for s in report.decodedSessions))
                for report in reports
            ],
        )

    def close(self) -> None:
        if self.group is not None:
            self.group.close()


@dataclass(frozen=True)
class RankExchange:
    """The ranks as the dataset sees them: each reads a disjoint shard of the sessions and
    the outcomes are exchanged (data/dataset.py::Exchange)."""

    rank: int
    size: int
    group: RankGroup

    def gather(self, value: object) -> list[object]:
        return self.group.gather(value)


def join_ranks(execution: Execution) -> Ranks:
    """This process's ranks, from the launcher's environment; one process without one."""
    place = rank_place_from_env(os.environ)
    device = resolve_device(execution.device, place)
    if device.type == "cuda":
        import torch

        torch.cuda.set_device(device)
    if not place.distributed:
        return Ranks(place, None, device)
    from rovertrain.distributed.group import RankGroup

    return Ranks(place, RankGroup.join(place, device, execution.rankTimeoutSeconds), device)


def one_process(execution: Execution) -> Ranks:
    """The single-process job's ranks (callers of run_steps that joined none)."""
    return Ranks(ONE_PROCESS, None, resolve_device(execution.device, ONE_PROCESS))
