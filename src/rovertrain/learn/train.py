"""The training loop: AdamW over shuffled passes of the pool, stopped by named predicates."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rovertrain.data.dataset import WindowSet
from rovertrain.errors import RovertrainError
from rovertrain.job.config import Config
from rovertrain.job.control import JobControl
from rovertrain.learn.learning import LossSetup, augment, batch_tensors, losses
from rovertrain.learn.policy import Policy
from rovertrain.protocol.events import EventStream

PROGRESS_EVERY = 10


@dataclass
class TrainResult:
    steps: int = 0
    examples: int = 0
    losses: list[float] = field(default_factory=list)
    gradient_norms: list[float] = field(default_factory=list)
    stopped_by: str = "passes completed"
    seconds: float = 0.0


def build_optimizer(model: Policy, config: Config) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        model.parameters(), lr=config.learningRate, weight_decay=config.weightDecay
    )


def train(
    model: Policy,
    optimizer: torch.optim.Optimizer,
    pool: WindowSet,
    setup: LossSetup,
    config: Config,
    control: JobControl,
    stream: EventStream,
    start_steps: int,
    start_examples: int,
    seed: int,
    training_deadline: float,
    on_step: Callable[[int], None] = lambda steps: None,
) -> TrainResult:
    result = TrainResult()
    steps, examples = start_steps, start_examples
    generator = torch.Generator().manual_seed(seed * 1_000_003 + start_steps)
    use_bf16 = config.precision == "bf16"

    def out_of_steps() -> bool:
        return result.steps >= config.maxStepsPerJob

    def out_of_time() -> bool:
        return control.elapsed() >= training_deadline

    def stop_requested() -> bool:
        return control.stop_reason is not None

    started = time.monotonic()
    window_started, window_examples = started, 0
    model.train()
    for _ in range(config.passesPerJob):
        order = torch.randperm(len(pool), generator=generator).numpy()
        for offset in range(0, len(order), config.batchSize):
            control.safe_point()
            if stop_requested():
                result.stopped_by = "stop requested"
            elif out_of_time():
                result.stopped_by = "time budget"
            elif out_of_steps():
                result.stopped_by = "maxStepsPerJob"
            if result.stopped_by != "passes completed":
                break
            control.activity = f"training step {steps + 1}"
            chosen = np.sort(order[offset : offset + config.batchSize])
            batch = batch_tensors(pool, chosen)
            images = augment(batch.images, generator) if config.augment else batch.images
            images = images.contiguous(memory_format=torch.channels_last)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                logits, predictions = model(images, batch.states)
            event_loss, value_loss = losses(logits, predictions, batch, setup)
            loss = event_loss + value_loss
            loss_value = float(loss.item())
            if not math.isfinite(loss_value):
                raise RovertrainError(
                    "non_finite_loss",
                    "The training loss became NaN or infinite; nothing was published. "
                    "Lower config.learningRate or check the recordings.",
                    f"step {steps + 1}: loss {loss_value}",
                )
            loss.backward()
            norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            if not math.isfinite(norm):
                raise RovertrainError(
                    "non_finite_loss",
                    "A training gradient became NaN or infinite; nothing was published.",
                    f"step {steps + 1}: gradient norm {norm}",
                )
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
                stream.emit(
                    "progress",
                    steps=steps,
                    examples=examples,
                    loss=loss_value,
                    losses={
                        "events": float(event_loss.item()),
                        "commandValues": float(value_loss.item()),
                    },
                    examplesPerSecond=round(rate, 2),
                    elapsedSeconds=round(control.elapsed(), 3),
                    remainingSeconds=round(max(0.0, control.remaining()), 3),
                )
            on_step(steps)
        if result.stopped_by != "passes completed":
            break
    result.seconds = round(time.monotonic() - started, 3)
    return result


def summarise_norms(norms: list[float]) -> dict[str, Any]:
    if not norms:
        return {"min": None, "max": None}
    return {"min": min(norms), "max": max(norms)}
