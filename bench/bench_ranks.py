"""Scale-out: 2 ranks x 1 thread against 1 process x 2 threads on the same job, the all-reduce
time of the policy's gradients, and the projected speed-up on 4, 8 and 16 nodes.

1. The same synthetic job (empty cache each time, fixed steps, no periodic evaluation) runs
   as `rovertrain run` (threads 2), `rovertrain run --nproc 2` (threads 1) and, for context,
   `rovertrain run` (threads 1), interleaved in rounds; decode throughput (video seconds
   decoded per second of the decode phase) and training throughput (examples per second of
   the training loop) are printed as ratios of the 2-rank run to the single process
   (requirement against 1 process x 2 threads: >= 0.9).
2. Two gloo ranks measure the per-rank training step and the all-reduce of a gradient-sized
   buffer (the policy's parameters, fp32).
3. From these: speed-up(N) = T1 / (T1 / N + Tar(N)), Tar(N) = 2 (N-1)/N * bytes / bandwidth
   + 2 (N-1) * latency (ring all-reduce); printed for N = 4, 8, 16 at 1 and 10 Gbit/s.

Run: `.venv/bin/python bench/bench_ranks.py` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROUNDS = 2
STEPS = 60
BATCH = 64
LINKS_GBIT = (1, 10)
NODES = (4, 8, 16)
LAN_LATENCY = 0.0001  # seconds per ring step on a switched LAN


def rovertrain(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "rovertrain", *args], capture_output=True, check=False
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    if not events or events[-1]["kind"] != "complete":
        sys.stderr.write(done.stderr.decode()[-3000:])
        raise SystemExit(f"rovertrain {' '.join(args)} did not complete")
    return events


def job_throughput(data: Path, work: Path, threads: int, nproc: int) -> tuple[float, float]:
    """(video seconds decoded per decode-phase second, training examples per second)."""
    root = work / f"root-{nproc}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(data / "recordings", root / "recordings")
    job = json.loads((data / "job.json").read_text())
    job["root"] = str(root)
    job["config"].update(
        threads=threads, maxStepsPerJob=STEPS, passesPerJob=10_000, evalEverySteps=0,
        probeMaxSeconds=0, minimumDrivingMinutes=0, newDrivingMinutesPerModel=0,
        batchSize=BATCH, checkpointEverySteps=0,
    )  # fmt: skip
    path = work / "job.json"
    path.write_text(json.dumps(job))
    events = rovertrain("run", "--job", str(path), "--nproc", str(nproc))
    phases = {e["phase"]: e["time"] / 1000 for e in events if e["kind"] == "phase"}
    video = sum(e["windows"] * 0.1 for e in events if e["kind"] == "dataset")  # 100 ms ticks
    decode = video / (phases["train"] - phases["decode"])
    complete = events[-1]
    train = complete["examples"] / complete["diagnostics"]["trainingSeconds"]
    return decode, train


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _rank(rank: int, ranks: int, port: int, out: str) -> None:
    """One gloo rank: the training step on its half of a batch, and the gradient all-reduce."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.learn.batches import augment, batch_tensors
    from rovertrain.learn.losses import loss_setup, losses
    from rovertrain.learn.policy import Policy

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import make_pool

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    pool = make_pool(1024)
    model = Policy().to(memory_format=torch.channels_last)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    setup = loss_setup(pool, initial_schema())
    generator = torch.Generator().manual_seed(rank)
    share = BATCH // ranks
    times = []
    for step in range(25):
        chosen = np.arange(step * share, (step + 1) * share) % len(pool)
        batch = batch_tensors(pool, chosen)
        images = augment(batch.images, generator).contiguous(memory_format=torch.channels_last)
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits, values = ddp(images, batch.states)
        event_loss, value_loss = losses(logits, values, batch, setup)
        (event_loss + value_loss).backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    parameters = sum(p.numel() for p in model.parameters())
    flat = torch.zeros(parameters)
    reduce_times = []
    for _ in range(30):
        dist.barrier()
        started = time.perf_counter()
        dist.all_reduce(flat)
        reduce_times.append(time.perf_counter() - started)
    if rank == 0:
        Path(out).write_text(
            json.dumps(
                {
                    "stepSeconds": statistics.median(times[5:]),
                    "allReduceSeconds": statistics.median(reduce_times[5:]),
                    "parameters": parameters,
                }
            )
        )
    dist.destroy_process_group()


def single_step_seconds() -> float:
    """One process, one thread, the whole batch: T1 of the projection."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import make_pool, rovertrain_loop

    torch.set_num_threads(1)
    pool = make_pool(1024)
    rovertrain_loop(pool, 3, False)
    return 1.0 / rovertrain_loop(pool, 20, False) * BATCH


def ring_seconds(nodes: int, nbytes: int, gbit: float, latency: float) -> float:
    return 2 * (nodes - 1) / nodes * nbytes / (gbit * 1e9 / 8) + 2 * (nodes - 1) * latency


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rovertrain-bench-ranks-"))
    try:
        data = work / "data"
        subprocess.run(
            [sys.executable, "-m", "rovertrain", "synth", "--out", str(data), "--sessions",
             "6", "--minutes", "0.6", "--seed", "5"], capture_output=True, check=True,
        )  # fmt: skip
        configurations = {"1x2": (2, 1), "2x1": (1, 2), "1x1": (1, 1)}
        rounds: list[dict[str, tuple[float, float]]] = []
        for round_number in range(ROUNDS):
            measured_round = {
                name: job_throughput(data, work, threads=threads, nproc=nproc)
                for name, (threads, nproc) in configurations.items()
            }
            rounds.append(measured_round)
            print(f"round {round_number + 1}: " + " | ".join(
                f"{name}: decode {d:.1f} video-s/s, train {t:.1f} ex/s"
                for name, (d, t) in measured_round.items()), file=sys.stderr)  # fmt: skip
        for index, what in enumerate(("decode", "train")):
            for reference in ("1x2", "1x1"):
                ratio = statistics.median(r["2x1"][index] / r[reference][index] for r in rounds)
                label = "2 threads" if reference == "1x2" else "1 thread"
                print(f"{what} throughput, 2 ranks x 1 thread / 1 process x {label}: "
                      f"{ratio:.2f}x")  # fmt: skip

        out = work / "ranks.json"
        import torch.multiprocessing as mp

        mp.start_processes(_rank, args=(2, free_port(), str(out)), nprocs=2,
                           start_method="spawn")  # fmt: skip
        measured = json.loads(out.read_text())
        t1 = single_step_seconds()
        nbytes = measured["parameters"] * 4
        print(f"per-rank step (batch {BATCH // 2}, DDP, 1 thread): "
              f"{measured['stepSeconds'] * 1000:.1f} ms; one process, batch {BATCH}: "
              f"{t1 * 1000:.1f} ms")  # fmt: skip
        print(f"gradient all-reduce, 2 gloo ranks on localhost, {nbytes / 1e6:.2f} MB fp32: "
              f"{measured['allReduceSeconds'] * 1000:.2f} ms")  # fmt: skip
        print("projected training speed-up: T1 / (T1/N + 2(N-1)/N*bytes/bw + 2(N-1)*lat)")
        # A LAN's per-step latency, and half the localhost all-reduce (no wire: its time is the
        # per-message cost on this machine, a pessimistic bound when the CPU is contended).
        for latency in (LAN_LATENCY, measured["allReduceSeconds"] / 2):
            print(f"latency {latency * 1000:.2f} ms per ring step:")
            print("| nodes | " + " | ".join(f"{g} Gbit/s" for g in LINKS_GBIT) + " |")
            print("|---|" + "---|" * len(LINKS_GBIT))
            for nodes in NODES:
                cells = []
                for gbit in LINKS_GBIT:
                    speed = t1 / (t1 / nodes + ring_seconds(nodes, nbytes, gbit, latency))
                    cells.append(f"{speed:.1f}x")
                print(f"| {nodes} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
