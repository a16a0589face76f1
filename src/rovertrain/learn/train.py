"""The training loop: AdamW over shuffled passes of the pool, stopped by named predicates."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import torch

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.data.dataset import WindowSet
from rovertrain.learn.batches import augment, batch_tensors, drop_value_history, hide_never_sent
from rovertrain.learn.losses import LossSetup, losses
from rovertrain.learn.policy import Policy

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
    learning_rate: float
    weight_decay: float
    batch_size: int
    passes: int
    max_steps: int
    augment: bool
    bf16: bool
    value_history_dropout: float = 0.0
    hide_never_sent: float = 0.0
    augment_colour: float = 0.0
    augment_shift: int = 0


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


def build_optimizer(model: Policy, hyper: Hyperparameters) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        model.parameters(), lr=hyper.learning_rate, weight_decay=hyper.weight_decay
    )


def _finite_or_fail(value: float, what: str, message: str, step: int) -> None:
    if not math.isfinite(value):
        raise RovertrainError(ErrorCode.NON_FINITE_LOSS, message, f"step {step}: {what} {value}")


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
    hyper = plan.hyper
    steps, examples = plan.start_steps, plan.start_examples
    generator = torch.Generator().manual_seed(plan.seed * 1_000_003 + plan.start_steps)

    def out_of_steps() -> bool:
        return result.steps >= hyper.max_steps

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
    window_started, window_examples = started, 0
    model.train()
    for _ in range(hyper.passes):
        order = torch.randperm(len(plan.pool), generator=generator).numpy()
        for offset in range(0, len(order), hyper.batch_size):
            control.safe_point()
            cause = stop_cause()
            if cause is not None:
                result.stopped_by = cause
                break
            control.activity = f"training step {steps + 1}"
            chosen = np.sort(order[offset : offset + hyper.batch_size])
            share, device = plan.share(len(chosen)), plan.share.device
            batch = batch_tensors(plan.pool, chosen[share], plan.setup.motion_slots).to(device)
            # Augmentation draws for the whole batch on every rank: generators stay in step.
            images = (
                augment(
                    batch.images,
                    generator,
                    share,
                    len(chosen),
                    colour=hyper.augment_colour,
                    shift=hyper.augment_shift,
                )
                if hyper.augment
                else batch.images
            )
            images = images.contiguous(memory_format=torch.channels_last)
            states = drop_value_history(
                batch.states, hyper.value_history_dropout, generator, share, len(chosen)
            )
            states = hide_never_sent(states, hyper.hide_never_sent, generator, share, len(chosen))
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=hyper.bf16):
                logits, predictions = model(images, states)
            event_loss, value_loss = losses(logits, predictions, batch, plan.setup)
            loss = event_loss + value_loss
            loss_value = float(loss.item())
            if not math.isfinite(loss_value):
                # Under DDP the other ranks already wait in this step's gradient all-reduce:
                # join it with NaN gradients, so that every rank fails the gradient check at
                # this same step (the job's `non_finite_loss`, as with one process) instead of
                # timing out on a rank that left. With one process this only costs a backward.
                (loss * math.nan).backward()  # type: ignore[no-untyped-call]
                _finite_or_fail(loss_value, "loss", NON_FINITE_LOSS, steps + 1)
            loss.backward()  # type: ignore[no-untyped-call]
            norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            _finite_or_fail(norm, "gradient norm", NON_FINITE_GRADIENT, steps + 1)
            optimizer.step()
            steps += 1
            examples += len(chosen)
            result.steps += 1
            result.examples += len(chosen)
            result.losses.append(loss_value)
            result.gradient_norms.append(norm)
            window_examples += len(chosen)
            if steps % PROGRESS_EVERY == 0:
                now = time.monotonic()
                rate = window_examples / max(1e-9, now - window_started)
                window_started, window_examples = now, 0
                on_progress(
                    TrainingProgress(
                        steps=steps,
                        examples=examples,
                        loss=loss_value,
                        event_loss=float(event_loss.item()),
                        value_loss=float(value_loss.item()),
                        examples_per_second=round(rate, 2),
                    )
                )
            on_step(steps)
        if result.stopped_by is not StopCause.PASSES_COMPLETED:
            break
    result.seconds = round(time.monotonic() - started, 3)
    return result


def summarise_norms(norms: list[float]) -> dict[str, Any]:
    if not norms:
        return {"min": None, "max": None}
    return {"min": min(norms), "max": max(norms)}
