"""The training loop: AdamW over shuffled passes of the pool, stopped by named predicates."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np
import torch

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.data.window_set import WindowSet
from rovertrain.learn.batches import (
    Batch,
    augment,
    batch_tensors,
    drop_value_history,
    hide_never_sent,
)
from rovertrain.learn.losses import LossSetup, losses, values_loss
from rovertrain.learn.policy import Policy, in_value_path
from rovertrain.learn.settings import Augmentation, Optimisation

PROGRESS_EVERY = 10
NON_FINITE_LOSS = (
    "The training loss became NaN or infinite; nothing was published. "
    "Lower config.learningRate or check the recordings."
)
NON_FINITE_GRADIENT = (
    "A training gradient (with several ranks: or another rank's loss) became NaN or infinite; "
    "nothing was published."
)


class StopCause(StrEnum):
    """Why training ended (`trainingStoppedBy` in the job's diagnostics)."""

    PASSES_COMPLETED = "passes completed"
    STOP_REQUESTED = "stop requested"
    TIME_BUDGET = "time budget"
    MAX_STEPS = "maxStepsPerJob"
    CONVERGED = "converged"

    def publication_blocker(self) -> str | None:
        """Running out of budget is a reason not to promote; other causes are not."""
        return "Job time budget reached" if self is StopCause.TIME_BUDGET else None


class TrainingControl(Protocol):
    """What the loop needs from the job's lifecycle (pause, stop, budget)."""

    activity: str

    def safe_point(self) -> None: ...
    def stop_requested(self) -> bool: ...
    def elapsed(self) -> float: ...
    def remaining(self) -> float: ...


class BatchShare(Protocol):
    """Which part of each (global) batch this process trains on, and where (distributed/)."""

    @property
    def device(self) -> torch.device: ...
    def __call__(self, count: int) -> slice: ...


CPU = torch.device("cpu")


@dataclass(frozen=True)
class WholeBatch:
    """One process: the whole batch, on the CPU (or its one GPU)."""

    device: torch.device = CPU

    def __call__(self, count: int) -> slice:
        return slice(None)


@dataclass(frozen=True)
class Hyperparameters:
    """How to train: the job's optimisation and augmentation knobs as declared, and whether
    to compute in bf16 (the `precision` knob resolved for the device, job/steps.py)."""

    optimisation: Optimisation
    augmentation: Augmentation
    bf16: bool


@dataclass(frozen=True)
class TrainingPlan:
    """One job's training: what to fit, how, from which counters, until when."""

    pool: WindowSet
    setup: LossSetup
    hyper: Hyperparameters
    seed: int
    start_steps: int
    start_examples: int
    deadline_seconds: float  # budget seconds (JobControl.elapsed) at which training must stop
    share: BatchShare = WholeBatch()


@dataclass(frozen=True)
class TrainingProgress:
    """Every PROGRESS_EVERY steps: the `progress` event's figures."""

    steps: int
    examples: int
    loss: float
    event_loss: float
    value_loss: float
    examples_per_second: float


@dataclass
class TrainResult:
    steps: int = 0
    examples: int = 0
    losses: list[float] = field(default_factory=list)
    gradient_norms: list[float] = field(default_factory=list)
    stopped_by: StopCause = StopCause.PASSES_COMPLETED
    seconds: float = 0.0

    def mean_loss(self) -> float:
        return sum(self.losses) / len(self.losses)

    def record(self, step: StepLosses, examples: int) -> None:
        self.steps += 1
        self.examples += examples
        self.losses.append(step.loss)
        self.gradient_norms.append(step.gradient_norm)


def build_optimizer(model: Policy, optimisation: Optimisation) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        model.parameters(), lr=optimisation.learningRate, weight_decay=optimisation.weightDecay
    )


def _finite_or_fail(value: float, what: str, message: str, step: int) -> None:
    if not math.isfinite(value):
        raise RovertrainError(ErrorCode.NON_FINITE_LOSS, message, f"step {step}: {what} {value}")


@dataclass(frozen=True)
class StepLosses:
    """One optimiser step's losses (tensors: read only when reported) and gradient norm."""

    loss: float
    event_loss: torch.Tensor
    value_loss: torch.Tensor
    gradient_norm: float


@dataclass(frozen=True)
class ClipGroups:
    """The parameters whose gradients are clipped each on its own: the shared encoder with the
    event trunk, and the value head's own path. The shared part then learns exactly as the
    one-head policy did, whatever the value path's gradients (docs/learning.md). Split once
    per run: the groups never change, so the training step does not walk the names again."""

    shared: tuple[torch.nn.Parameter, ...]
    values: tuple[torch.nn.Parameter, ...]

    @staticmethod
    def of(model: torch.nn.Module) -> ClipGroups:
        named = list(model.named_parameters())
        return ClipGroups(
            tuple(p for name, p in named if not in_value_path(name)),
            tuple(p for name, p in named if in_value_path(name)),
        )

    def clip(self, max_norm: float) -> float:
        """Clips both groups to `max_norm`; the norm of all the gradients before clipping."""
        return math.hypot(
            float(torch.nn.utils.clip_grad_norm_(self.shared, max_norm)),
            float(torch.nn.utils.clip_grad_norm_(self.values, max_norm)),
        )


class Throughput:
    """Examples per second since the last progress report."""

    def __init__(self, started: float):
        self.started, self.examples = started, 0

    def add(self, examples: int) -> None:
        self.examples += examples

    def rate(self) -> float:
        """The rate since the last call (or the start); starts a new window."""
        now = time.monotonic()
        rate = self.examples / max(1e-9, now - self.started)
        self.started, self.examples = now, 0
        return rate


def shuffled_batches(plan: TrainingPlan, generator: torch.Generator) -> Iterator[np.ndarray]:
    """The pool's rows batch by batch (sorted within a batch), reshuffled every pass."""
    optimisation = plan.hyper.optimisation
    for _ in range(optimisation.passesPerJob):
        order = torch.randperm(len(plan.pool), generator=generator).numpy()
        for offset in range(0, len(order), optimisation.batchSize):
            yield np.sort(order[offset : offset + optimisation.batchSize])


def model_inputs(
    batch: Batch, plan: TrainingPlan, generator: torch.Generator, share: slice, count: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images, states) of this rank's share of a `count`-window batch, augmented.

    Augmentation draws for the whole batch on every rank: the generators stay in step."""
    augmentation = plan.hyper.augmentation
    images = batch.images
    if augmentation.augment:
        images = augment(
            images,
            generator,
            share,
            count,
            colour=augmentation.augmentColour,
            shift=augmentation.augmentShiftPixels,
        )
    images = images.contiguous(memory_format=torch.channels_last)
    states = drop_value_history(
        batch.states, augmentation.valueHistoryDropout, generator, share, count
    )
    states = hide_never_sent(states, augmentation.hideNeverSent, generator, share, count)
    return images, states


def training_step(
    model: Policy,
    optimizer: torch.optim.Optimizer,
    plan: TrainingPlan,
    chosen: np.ndarray,
    generator: torch.Generator,
    step: int,
    groups: ClipGroups,
) -> StepLosses:
    """Forward, backward, clip (`groups`, of this `model`) and step on the batch of pool rows
    `chosen` (this rank's share of it); `non_finite_loss` when the loss or the gradient norm
    is not finite."""
    share, device = plan.share(len(chosen)), plan.share.device
    batch = batch_tensors(plan.pool, chosen[share], plan.setup.motion_slots).to(device)
    images, states = model_inputs(batch, plan, generator, share, len(chosen))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=plan.hyper.bf16):
        logits, predictions, shared, level_logits = model(images, states, auxiliary=True)
    event_loss, value_loss = losses(logits, predictions, batch, plan.setup, level_logits)
    # The event trunk's own value prediction: never sent, its loss shapes what the events see.
    value_loss = value_loss + values_loss(shared, batch, plan.setup)
    loss = event_loss + value_loss
    loss_value = float(loss.item())
    if not math.isfinite(loss_value):
        # Under DDP the other ranks already wait in this step's gradient all-reduce:
        # join it with NaN gradients, so that every rank fails the gradient check at
        # this same step (the job's `non_finite_loss`, as with one process) instead of
        # timing out on a rank that left. With one process this only costs a backward.
        (loss * math.nan).backward()  # type: ignore[no-untyped-call]
        _finite_or_fail(loss_value, "loss", NON_FINITE_LOSS, step)
    loss.backward()  # type: ignore[no-untyped-call]
    norm = groups.clip(1.0)
    _finite_or_fail(norm, "gradient norm", NON_FINITE_GRADIENT, step)
    optimizer.step()
    return StepLosses(loss_value, event_loss, value_loss, norm)


def train(
    model: Policy,
    optimizer: torch.optim.Optimizer,
    plan: TrainingPlan,
    control: TrainingControl,
    on_progress: Callable[[TrainingProgress], None],
    on_step: Callable[[int], None] = lambda steps: None,
    converged: Callable[[], bool] = lambda: False,
) -> TrainResult:
    """`on_step(steps)` after every step; `converged()` ends training (StopCause.CONVERGED)."""
    result = TrainResult()
    generator = torch.Generator().manual_seed(plan.seed * 1_000_003 + plan.start_steps)

    def out_of_steps() -> bool:
        return result.steps >= plan.hyper.optimisation.maxStepsPerJob

    def out_of_time() -> bool:
        return control.elapsed() >= plan.deadline_seconds

    def stop_cause() -> StopCause | None:
        if control.stop_requested():
            return StopCause.STOP_REQUESTED
        if out_of_time():
            return StopCause.TIME_BUDGET
        if out_of_steps():
            return StopCause.MAX_STEPS
        if converged():
            return StopCause.CONVERGED
        return None

    started = time.monotonic()
    throughput = Throughput(started)
    model.train()
    groups = ClipGroups.of(model)
    for chosen in shuffled_batches(plan, generator):
        control.safe_point()
        cause = stop_cause()
        if cause is not None:
            result.stopped_by = cause
            break
        steps = plan.start_steps + result.steps + 1  # counted over every job, as resumed
        control.activity = f"training step {steps}"
        step = training_step(model, optimizer, plan, chosen, generator, steps, groups)
        result.record(step, len(chosen))
        throughput.add(len(chosen))
        if steps % PROGRESS_EVERY == 0:
            on_progress(
                TrainingProgress(
                    steps=steps,
                    examples=plan.start_examples + result.examples,
                    loss=step.loss,
                    event_loss=float(step.event_loss.item()),
                    value_loss=float(step.value_loss.item()),
                    examples_per_second=round(throughput.rate(), 2),
                )
            )
        on_step(steps)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def summarise_norms(norms: list[float]) -> dict[str, float | None]:
    if not norms:
        return {"min": None, "max": None}
    return {"min": min(norms), "max": max(norms)}
