"""The job layer's knobs: where and how the job runs (the job file's `config`), its budget,
and the seed (top level)."""

from __future__ import annotations

from dataclasses import dataclass

from rovertrain.contracts.settings import MAX_SECONDS, knob


@dataclass(frozen=True)
class Execution:
    """Execution: the CPU threads, the device, and the ranks of a distributed job."""

    threads: int = knob(2, 1, 64, integer=True, doc="CPU threads for torch and decoding")
    device: str = knob(
        "cpu",
        choices=("cpu", "cuda", "auto"),
        doc="where training runs: cpu, cuda (one GPU per local rank), or auto (cuda when "
        "available)",
    )
    rankTimeoutSeconds: float = knob(
        300,
        1,
        MAX_SECONDS,
        doc="distributed jobs: longest wait for another rank at a collective before the job "
        "ends with rank_failed",
    )


@dataclass(frozen=True)
class Budget:
    """Budget: how long the job may take, pause and stop, and how often it says it is alive."""

    maxJobSeconds: float = knob(600, 0, MAX_SECONDS, exclusive_minimum=True, doc="time budget")
    stopGraceSeconds: float = knob(20, 1, 3600, doc="time after a stop request or the budget")
    heartbeatSeconds: float = knob(
        15,
        0,
        3600,
        exclusive_minimum=True,
        doc="a `heartbeat` event when nothing else was said for this long",
    )
    maxPausedSeconds: float = knob(
        3600, 0, MAX_SECONDS, doc="longest pause (SIGTSTP) before the job stops as if asked to"
    )


@dataclass(frozen=True)
class Seeding:
    """Reproducibility: the seed of the session order, the sampling, the batches and the
    initial weights."""

    seed: int = knob(
        0,
        0,
        2**32 - 1,
        integer=True,
        doc="the order sessions are processed in, the sampling, the batches and the initial "
        "weights: the same job on the same recordings and threads trains the same weights",
    )
