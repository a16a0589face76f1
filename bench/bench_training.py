"""Training throughput of rovertrain's loop vs a bare PyTorch loop (same model, batch, threads).

Prints the ratio of examples/s; the requirement is >= 0.9. Also reports bytes per window of the
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
from rovertrain.data.dataset import WindowSet
from rovertrain.job.config import parse_job
from rovertrain.job.steps import uses_bf16
from rovertrain.learn.batches import augment, batch_tensors
from rovertrain.learn.losses import loss_setup, losses, values_loss
from rovertrain.learn.policy import Policy

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


def rovertrain_loop(pool: WindowSet, steps: int, bf16: bool) -> float:
    """The product's step: index the compact pool (this tick's and the previous tick's frames),
    augment, autocast as configured, both value losses, AdamW."""
    model = Policy().to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    setup = loss_setup(pool, initial_schema())
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(len(pool), generator=generator).numpy()
    started = time.perf_counter()
    for step in range(steps):
        chosen = np.sort(order[(step * BATCH) % len(pool) :][:BATCH])
        batch = batch_tensors(pool, chosen)
        images = augment(batch.images, generator).contiguous(memory_format=torch.channels_last)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits, values, shared = model(images, batch.states, auxiliary=True)
        event_loss, value_loss = losses(logits, values, batch, setup)
        (event_loss + value_loss + values_loss(shared, batch, setup)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
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
    parse_job({"root": "/x", "sessions": []})
    bf16 = uses_bf16("auto")
    for warm in (True, False):
        bare_loop(pool, 5, warm)  # warm-up
    rovertrain_loop(pool, 5, bf16)
    bare = {name: bare_loop(pool, STEPS, flag) for name, flag in (("bf16", True), ("fp32", False))}
    fastest = max(bare, key=lambda name: bare[name])
    ours = rovertrain_loop(pool, STEPS, bf16)
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
