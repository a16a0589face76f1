"""Rover runtime benchmarks (figures in docs/performance.md).

1. `policy.tick` at batch 1 (state update + preprocessing + inference) against a bare
   onnxruntime `session.run` on a pre-built input, same session, interleaved: medians and ratio,
   for a 640x480 camera frame and for a frame already at the model's 96x72.
2. `rovertrain replay` (exported model, no --out) of a 10-minute 640x480 30 fps recording:
   seconds of drive per second of wall time (>= 20x wanted). `--no-replay` skips it.
The load average is printed with the figures: the machines here are shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import torch

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.deploy.export import export_checkpoint
from rovertrain.learn.policy import Policy, specification
from rovertrain.runtime import RoverPolicy
from rovertrain.runtime.frames import prepare_frame
from rovertrain.store.publish import publish_checkpoint

MINUTES, FPS, WIDTH, HEIGHT = 10, 30, 640, 480


def exported_model(directory: Path) -> Path:
    torch.manual_seed(0)
    model_id = str(uuid.uuid4())
    meta = {"name": "bench", "createdAt": 1, "specification": specification(initial_schema()),
            "actionThreshold": 0.5}  # fmt: skip
    publish_checkpoint(directory / "root", model_id, dict(Policy().state_dict()), meta)
    out = directory / "exported"
    export_checkpoint(
        str(directory / "root" / "training" / "checkpoints" / model_id), str(out), None
    )
    return out


def median_ms(samples: list[float]) -> float:
    return float(np.median(samples)) * 1000


def tick_latency(folder: Path, frame: np.ndarray, rounds: int = 2000) -> tuple[float, float]:
    policy = RoverPolicy.load(folder, threads=1)
    image, state = policy.inputs(frame, 0)
    feeds = {"images": image, "states": state}
    for _ in range(100):
        policy.session.run(None, feeds)
    bare, tick = [], []
    t = 100
    for index in range(rounds):
        if index % 5 == 0:
            policy.observe_command(t - 50, "drive", {"speed": 0.5, "turn": 0.1})
        started = time.perf_counter()
        policy.session.run(None, feeds)
        bare.append(time.perf_counter() - started)
        started = time.perf_counter()
        policy.tick(frame, t)
        tick.append(time.perf_counter() - started)
        t += 100
    return median_ms(bare), median_ms(tick)


def write_recording(root: Path, session_id: str) -> None:
    directory = root / "recordings" / session_id
    directory.mkdir(parents=True)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    base = np.stack([x * 255 // WIDTH, y * 255 // HEIGHT, (x + y) * 255 // (WIDTH + HEIGHT)], -1)
    base = base.astype(np.uint8)
    base[200:280, 100:200] = (230, 120, 20)
    with av.open(str(directory / "camera.mp4"), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.codec_context.options = {"preset": "ultrafast"}
        for index in range(MINUTES * 60 * FPS):
            frame = av.VideoFrame.from_ndarray(np.roll(base, index * 3, axis=1), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    rng = np.random.default_rng(0)
    lines = []
    for t in range(0, MINUTES * 60_000, 250):
        if rng.random() < 0.03:
            lines.append({"t": t, "type": "stop"})
        else:
            values = {
                "speed": round(float(rng.uniform(0, 1)), 2),
                "turn": round(float(rng.uniform(-1, 1)), 2),
            }
            lines.append({"t": t, "type": "drive", "values": values})
    (directory / "commands.ndjson").write_text("".join(json.dumps(line) + "\n" for line in lines))
    meta = {"format": "rovertrain-recording/1", "sessionId": session_id, "roverId": "bench",
            "controlProfile": None, "video": {"file": "camera.mp4", "offsetMs": 0},
            "commands": {"file": "commands.ndjson"}}  # fmt: skip
    (directory / "session.json").write_text(json.dumps(meta))


def replay_factor(folder: Path, root: Path, session_id: str) -> tuple[float, float]:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", "replay", str(folder), str(root), session_id,
         "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    summary = json.loads(completed.stdout.splitlines()[-1])
    return MINUTES * 60 / wall, float(summary["realtimeFactor"])


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    print(load())
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        folder = exported_model(directory)
        rng = np.random.default_rng(0)
        camera = rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)
        small = prepare_frame(camera)
        samples = []
        for _ in range(2000):
            started = time.perf_counter()
            prepare_frame(camera)
            samples.append(time.perf_counter() - started)
        for label, frame in (("640x480", camera), ("96x72", small)):
            bare, tick = tick_latency(folder, frame)
            print(f"tick {label}: median {tick:.3f} ms, bare session.run {bare:.3f} ms, "
                  f"ratio {tick / bare:.2f} (<= 1.3 wanted) ({load()})")  # fmt: skip
        print(f"prepare_frame 640x480 -> 96x72: median {median_ms(samples):.3f} ms")
        if "--no-replay" in sys.argv:
            return
        write_recording(directory / "data", "bench-10min")
        wall_factor, own_factor = replay_factor(folder, directory / "data", "bench-10min")
        print(f"replay of a {MINUTES}-minute {WIDTH}x{HEIGHT} {FPS} fps recording: "
              f"{wall_factor:.1f}x realtime including start-up ({own_factor:.1f}x inside the "
              f"command) (>= 20 wanted)")  # fmt: skip


if __name__ == "__main__":
    main()
