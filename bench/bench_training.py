"""Training throughput of rovertrain's loop vs a bare PyTorch loop (same model, batch, threads).

Prints the ratio of examples/s; the requirement is >= 0.9. The product's side is its own
`training_step` with the default job's settings (augmentation included); the bare side has no
augmentation, one reused batch and one loss, the floor of what a training step can cost. A
second bare loop does the product's work (the next batch each step, a loss on every output),
so the second ratio is what rovertrain's own code costs. Also reports bytes per window of the
sample pool. Run: `make bench` (or `.venv/bin/python bench/bench_training.py`).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.contracts.observation import (
    MODEL_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data.window_set import WindowSet
from rovertrain.job.config import Config, parse_job
from rovertrain.job.steps import hyperparameters
from rovertrain.learn.losses import loss_setup
from rovertrain.learn.policy import Policy
from rovertrain.learn.train import ClipGroups, TrainingPlan, build_optimizer, training_step

THREADS, BATCH, WINDOWS = 2, 64, 4096
ROUNDS, STEPS_PER_ROUND = 9, 20


def make_pool(count: int) -> WindowSet:
    rng = np.random.default_rng(0)
    fires = (rng.random((count, SLOTS)) < 0.2).astype(np.uint8)
    fires[:, 2:] = 0
    available = np.zeros((count, SLOTS, VALUES), dtype=np.uint8)
    available[:, 1, :2] = fires[:, 1, None]
    return WindowSet(
        frames=rng.integers(0, 255, (count, OBS_HEIGHT, OBS_WIDTH, MODEL_CHANNELS), dtype=np.uint8),
        states=rng.random((count, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32),
        fires=fires,
        fires_next=np.zeros_like(fires),  # the gate's, not training's
        values=rng.uniform(-1, 1, (count, SLOTS, VALUES)).astype(np.float32),
        available=available,
        category=rng.integers(0, 3, count).astype(np.int8),
        session=np.zeros(count, dtype=np.int32),
    )


class ProductSteps:
    """The product's own training step (`learn.train.training_step`) with the default job's
    settings: the compact pool's two pictures, colour and shift augmentation, the state's
    augmentation, both value losses, the two clip groups, AdamW, precision as resolved."""

    def __init__(self, pool: WindowSet, config: Config):
        hyper = hyperparameters(config)
        self.pool = pool
        self.model = Policy().to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(self.model, hyper.optimisation)
        weights = config.loss
        setup = loss_setup(
            pool, initial_schema(), weights.resendValueWeight, weights.typeChangeEventWeight
        )
        self.plan = TrainingPlan(pool, setup, hyper, seed=0, start_steps=0, start_examples=0,
                                 deadline_seconds=float("inf"))  # fmt: skip
        self.generator = torch.Generator().manual_seed(0)
        self.groups = ClipGroups.of(self.model)
        self.order = torch.randperm(len(pool), generator=self.generator).numpy()
        self.step = 0
        self.model.train()

    def run(self, steps: int) -> float:
        """Seconds for `steps` more steps."""
        started = time.perf_counter()
        for _ in range(steps):
            chosen = np.sort(self.order[(self.step * BATCH) % len(self.pool) :][:BATCH])
            self.step += 1
            training_step(self.model, self.optimizer, self.plan, chosen, self.generator,
                          self.step, self.groups)  # fmt: skip
        return time.perf_counter() - started


class BareSteps:
    """A bare configuration: pre-built tensors, channels_last, bf16 autocast or fp32.

    `same_work`: each step reads the next batch of the pool (uint8 to float, no augmentation)
    and the loss counts every output the product trains (the events, the values, the event
    trunk's value prediction): what the product's step computes, without its code."""

    def __init__(self, pool: WindowSet, bf16: bool, same_work: bool = False):
        self.pool, self.bf16, self.same_work = pool, bf16, same_work
        self.model = Policy().to(memory_format=torch.channels_last)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.images = self.float_pictures(slice(0, BATCH))
        self.states = torch.from_numpy(pool.states[:BATCH])
        self.fires = torch.from_numpy(pool.fires[:BATCH].astype(np.float32))
        self.step = 0

    def float_pictures(self, rows: slice) -> torch.Tensor:
        images = torch.from_numpy(self.pool.pictures(rows)).permute(0, 3, 1, 2)
        return (images.float() / 255).contiguous(memory_format=torch.channels_last)

    def run(self, steps: int) -> float:
        started = time.perf_counter()
        for _ in range(steps):
            images = self.images
            if self.same_work:
                first = (self.step * BATCH) % (len(self.pool) - BATCH)
                images = self.float_pictures(slice(first, first + BATCH))
            self.step += 1
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                logits, values, shared = self.model(images, self.states, auxiliary=True)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), self.fires)
            if self.same_work:
                loss = loss + values.float().square().mean() + shared.float().square().mean()
            loss.backward()
            self.optimizer.step()
        return time.perf_counter() - started


def main() -> None:
    """Rounds of the three loops, in a rotating order: a shared machine's speed drifts by tens
    of percent within a minute, so each round's ratio compares loops timed seconds apart, and
    the median round is reported (one loop after another measured the drift: 0.67-0.92 in
    three runs of the same tree)."""
    torch.set_num_threads(THREADS)
    pool = make_pool(WINDOWS)
    config = parse_job({"root": "/x", "sessions": []}).config
    bf16 = hyperparameters(config).bf16
    loops: dict[str, ProductSteps | BareSteps] = {
        "bare bf16": BareSteps(pool, True),
        "bare fp32": BareSteps(pool, False),
        "same work": BareSteps(pool, bf16, same_work=True),
        "rovertrain": ProductSteps(pool, config),
    }
    for loop in loops.values():
        loop.run(5)  # warm-up
    seconds: dict[str, list[float]] = {name: [] for name in loops}
    names = list(loops)
    for round_index in range(ROUNDS):
        for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
            seconds[name].append(loops[name].run(STEPS_PER_ROUND))
    rates = {name: [STEPS_PER_ROUND * BATCH / s for s in times] for name, times in seconds.items()}
    bare = {name: rate for name, rate in rates.items() if name.startswith("bare ")}
    fastest = max(bare, key=lambda name: float(np.median(bare[name])))
    ratios = [
        ours / reference
        for ours, reference in zip(rates["rovertrain"], rates[fastest], strict=True)
    ]
    print(
        f"threads={THREADS} batch={BATCH} rounds={ROUNDS}x{STEPS_PER_ROUND} steps "
        f"cpu={torch.backends.cpu.get_cpu_capability()}"
    )
    for name, rate in rates.items():
        print(f"{name:11s}: median {np.median(rate):7.1f} examples/s "
              f"(rounds {min(rate):.0f}-{max(rate):.0f})")  # fmt: skip
    print(f"bf16 / fp32 (bare): {np.median(bare['bare bf16']) / np.median(bare['bare fp32']):.2f}")
    print(f"rovertrain precision (auto): {'bf16' if bf16 else 'fp32'}")
    print(
        f"ratio to the fastest bare loop ({fastest}) (>= 0.90 required): median "
        f"{np.median(ratios):.2f} (rounds {min(ratios):.2f}-{max(ratios):.2f})"
    )
    same = [
        ours / reference
        for ours, reference in zip(rates["rovertrain"], rates["same work"], strict=True)
    ]
    print(
        f"ratio to the bare loop doing the same work (fresh batches, every output): median "
        f"{np.median(same):.2f} (rounds {min(same):.2f}-{max(same):.2f}): what rovertrain's "
        "own code costs"
    )
    print(f"pool bytes per window: {pool.nbytes() / len(pool):.0f}")


if __name__ == "__main__":
    main()
