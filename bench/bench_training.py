"""Training throughput of rovertrain's loop vs a bare PyTorch loop (same model, batch, threads).

Prints the ratio of examples/s; the requirement is >= 0.9. The product's side is its own
`training_step` with the default job's settings (augmentation included); the bare side has no
augmentation and one loss, the floor of what a training step can cost. Also reports bytes per
window of the sample pool. Run: `make bench` (or `.venv/bin/python bench/bench_training.py`).
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
from rovertrain.data.dataset import WindowSet
from rovertrain.job.config import Config, parse_job
from rovertrain.job.steps import hyperparameters
from rovertrain.learn.losses import loss_setup
from rovertrain.learn.policy import Policy
from rovertrain.learn.train import ClipGroups, TrainingPlan, build_optimizer, training_step

THREADS, BATCH, STEPS, WINDOWS = 2, 64, 60, 4096


def make_pool(count: int) -> WindowSet:
    rng = np.random.default_rng(0)
    fires = (rng.random((count, SLOTS)) < 0.2).astype(np.uint8)
    fires[:, 2:] = 0
    available = np.zeros((count, SLOTS, VALUES), dtype=np.uint8)
    available[:, 1, :2] = fires[:, 1, None]
    return WindowSet(
        rng.integers(0, 255, (count, OBS_HEIGHT, OBS_WIDTH, MODEL_CHANNELS), dtype=np.uint8),
        rng.random((count, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32),
        fires,
        rng.uniform(-1, 1, (count, SLOTS, VALUES)).astype(np.float32),
        available,
        rng.integers(0, 3, count).astype(np.int8),
        np.zeros(count, dtype=np.int32),
    )


def rovertrain_loop(pool: WindowSet, steps: int, config: Config) -> float:
    """The product's own training step (`learn.train.training_step`) with the default job's
    settings: the compact pool's two pictures, colour and shift augmentation, the state's
    augmentation, both value losses, the two clip groups, AdamW, precision as resolved."""
    hyper = hyperparameters(config)
    model = Policy().to(memory_format=torch.channels_last)
    optimizer = build_optimizer(model, hyper.optimisation)
    weights = config.loss
    setup = loss_setup(
        pool, initial_schema(), weights.resendValueWeight, weights.typeChangeEventWeight
    )
    plan = TrainingPlan(pool, setup, hyper, seed=0, start_steps=0, start_examples=0,
                        deadline_seconds=float("inf"))  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    groups = ClipGroups.of(model)
    order = torch.randperm(len(pool), generator=generator).numpy()
    model.train()
    started = time.perf_counter()
    for step in range(steps):
        chosen = np.sort(order[(step * BATCH) % len(pool) :][:BATCH])
        training_step(model, optimizer, plan, chosen, generator, step + 1, groups)
    return steps * BATCH / (time.perf_counter() - started)


def bare_loop(pool: WindowSet, steps: int, bf16: bool) -> float:
    """A bare configuration: pre-built tensors, channels_last, bf16 autocast or fp32."""
    model = Policy().to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images = torch.from_numpy(pool.pictures(slice(0, BATCH))).permute(0, 3, 1, 2).float() / 255
    images = images.contiguous(memory_format=torch.channels_last)
    states = torch.from_numpy(pool.states[:BATCH])
    fires = torch.from_numpy(pool.fires[:BATCH].astype(np.float32))
    started = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits, _values = model(images, states)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), fires)
        loss.backward()
        optimizer.step()
    return steps * BATCH / (time.perf_counter() - started)


def main() -> None:
    torch.set_num_threads(THREADS)
    pool = make_pool(WINDOWS)
    config = parse_job({"root": "/x", "sessions": []}).config
    bf16 = hyperparameters(config).bf16
    for warm in (True, False):
        bare_loop(pool, 5, warm)  # warm-up
    rovertrain_loop(pool, 5, config)
    bare = {name: bare_loop(pool, STEPS, flag) for name, flag in (("bf16", True), ("fp32", False))}
    fastest = max(bare, key=lambda name: bare[name])
    ours = rovertrain_loop(pool, STEPS, config)
    print(
        f"threads={THREADS} batch={BATCH} steps={STEPS} cpu={torch.backends.cpu.get_cpu_capability()}"
    )
    for name, rate in bare.items():
        print(f"bare torch loop {name} : {rate:8.1f} examples/s")
    print(f"bf16 / fp32 (bare): {bare['bf16'] / bare['fp32']:.2f}")
    print(
        f"rovertrain train step ({'bf16' if bf16 else 'fp32'}, precision auto): {ours:8.1f} examples/s"
    )
    print(
        f"ratio to the fastest bare loop ({fastest}) (>= 0.90 required): {ours / bare[fastest]:.2f}"
    )
    print(f"pool bytes per window: {pool.nbytes() / len(pool):.0f}")


if __name__ == "__main__":
    main()
