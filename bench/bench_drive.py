"""Closed-loop driving speed (figures in docs/performance.md, "Closed-loop rollouts").

1. The policy's rollout (10 ms physics ticks, a 320x240 camera frame rendered every 100 ms,
   `RoverPolicy.tick`: prepare_frame + StateTracker + torch inference at batch 1) on each
   world: simulated seconds per wall second (>= 10x wanted), with its parts timed in the same
   process, interleaved with it: rendering alone and ticking alone, per 100 ms tick.
2. `rovertrain drive` (checkpoint folder, the policy and its three baselines, no --out) as a
   user runs it: simulated seconds of all four controllers per wall second, start-up included.
3. `rovertrain drive --supervised --record ROOT` (issue 27: >= 5x realtime wanted): the policy
   (it drives straight on, so the human model takes over in every bend) under supervision,
   every rollout encoded as a recording; against the same command without --record and the
   policy alone (`--no-baselines`) in the same run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import torch

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.deploy.replay import load_policy
from rovertrain.learn.policy import Policy, specification
from rovertrain.runtime import RoverPolicy
from rovertrain.sim.rollout import RolloutRequest, rollout
from rovertrain.sim.worlds import rollout_scenario
from rovertrain.store.publish import publish_checkpoint

SECONDS = 60.0
ROUNDS = 3


def checkpoint(directory: Path) -> Path:
    torch.manual_seed(0)
    model = Policy().eval()
    with torch.no_grad():  # fires drive, never stop: the rover moves and meets obstacles
        model.events.bias.copy_(torch.tensor([-6.0, 6.0] + [-6.0] * 6))
        model.values.bias[4] = 1.0  # drive speed (slot 1, value 0) about 0.76
    model_id = str(uuid.uuid4())
    meta = {"name": "bench", "createdAt": 1, "specification": specification(initial_schema()),
            "actionThreshold": 0.5}  # fmt: skip
    publish_checkpoint(directory / "root", model_id, dict(model.state_dict()), meta)
    return directory / "root" / "training" / "checkpoints" / model_id


def parts_ms(world: str, policy: RoverPolicy, ticks: int = 200) -> tuple[float, float]:
    """Median ms per tick: rendering a frame; ticking the policy on a frame."""
    scenario = rollout_scenario(world, 0)
    frame = scenario.world.render()
    render, tick = [], []
    policy.reset()
    for index in range(ticks):
        scenario.world.pose.s += 0.3
        started = time.perf_counter()
        frame = scenario.world.render()
        render.append(time.perf_counter() - started)
        started = time.perf_counter()
        policy.tick(frame, index * 100)
        tick.append(time.perf_counter() - started)
    return float(np.median(render)) * 1000, float(np.median(tick)) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = checkpoint(Path(name))
        loaded = load_policy(str(folder))
        policy, engine = loaded.policy, loaded.engine
        for world in ("road", "warehouse"):
            factors = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                metrics, _ = rollout(RolloutRequest(world, 0, SECONDS, "policy", lambda: policy))
                factors.append(SECONDS / (time.perf_counter() - started))
                render, tick = parts_ms(world, policy)
            best = max(factors)
            print(f"{world}: policy rollout ({engine}) {best:.1f}x realtime (best of {ROUNDS}; "
                  f"all {', '.join(f'{f:.1f}' for f in factors)}) (>= 10 wanted); per 100 ms "
                  f"tick: render {render:.2f} ms, policy.tick {tick:.2f} ms; "
                  f"{metrics.distance_m:.0f} m driven")  # fmt: skip
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "rovertrain", "drive", str(folder), "--seconds", "60",
             "--seeds", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        summary = json.loads(completed.stdout.splitlines()[-1])
        simulated = summary["simulatedSeconds"]
        print(f"rovertrain drive (4 controllers x 2 seeds x 60 s): {simulated / wall:.1f}x "
              f"realtime including start-up ({summary['realtimeFactor']:.1f}x inside the "
              f"command)")  # fmt: skip
        supervised(folder, Path(name))


def timed_drive(folder: Path, *extra: str) -> tuple[float, dict[str, object]]:
    """Simulated seconds per wall second of one `rovertrain drive` (start-up included)."""
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", "drive", str(folder), "--world", "road",
         "--seconds", "120", "--seeds", "3", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    summary = json.loads(completed.stdout.splitlines()[-1])
    return float(summary["simulatedSeconds"]) / wall, summary


def supervised(folder: Path, scratch: Path) -> None:
    alone, _ = timed_drive(folder, "--no-baselines")
    watched, _ = timed_drive(folder, "--supervised")
    recorded, summary = timed_drive(folder, "--supervised", "--record", str(scratch / "field"))
    field = summary["controllers"]["supervised"]["field"]  # type: ignore[index]
    print(f"drive --supervised --record (3 road seeds x 120 s, {field['takeOvers']} take-overs): "
          f"{recorded:.1f}x realtime including start-up (>= 5 wanted); without --record "
          f"{watched:.1f}x; the policy alone {alone:.1f}x; recording costs "
          f"{watched / recorded:.2f}x, supervision {alone / watched:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
