"""Synthetic driving recordings: a small, learnable world and a human-like driver.

The camera sees a road whose curve and the rover's position on it decide the steering, and
cones that make the driver stop. The driver reacts 150-300 ms late and with noise, sends
`drive` when its controls change beyond a deadband and as a keepalive about every 500 ms while
moving, repeats `stop` while a cone blocks the way, and sometimes idles. Videos are VP8 WebM
like a browser's MediaRecorder, with a per-session capture offset.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from rovertrain.data.partition import is_held_out
from rovertrain.data.recording import FORMAT
from rovertrain.store.layout import Layout

WIDTH, HEIGHT = 320, 240
HORIZON = 84
STEP_MS = 10
KEEPALIVE_MS = 500
ROVERS = ("rover-ash", "rover-birch", "rover-cedar")
PROFILES = ("gamepad", "keyboard")


@dataclass
class World:
    s: float = 0.0  # distance along the road
    x: float = 0.0  # lateral offset (road half width is 1)
    heading: float = 0.0
    speed: float = 0.0
    turn: float = 0.0
    cone: float | None = None  # distance of the next cone along the road
    cone_clear_at: float | None = None


def curvature(s: float, phases: tuple[float, float, float]) -> float:
    a, b, c = phases
    return 0.55 * math.sin(s / 9.0 + a) + 0.3 * math.sin(s / 4.3 + b) + 0.15 * math.sin(s / 2.1 + c)


class Renderer:
    def __init__(self, rng: np.random.Generator):
        self.columns = np.arange(WIDTH, dtype=np.float32)[None, :]
        rows = np.arange(HEIGHT - HORIZON, dtype=np.float32)
        self.depth = 60.0 / (rows + 3.0)  # metres ahead for each ground row
        self.grass = rng.integers(-18, 18, size=(HEIGHT - HORIZON, WIDTH), dtype=np.int16)
        self.sky = np.zeros((HORIZON, WIDTH, 3), dtype=np.uint8)
        self.sky[:] = (150, 190, 235)

    def frame(self, world: World, phases: tuple[float, float, float], light: float) -> np.ndarray:
        depth = self.depth[:, None]
        ahead = np.array([curvature(world.s + d, phases) for d in self.depth[::8]])
        bend = np.repeat(ahead, 8)[: len(self.depth)][:, None]
        lateral = -world.x - world.heading * depth + 0.05 * bend * depth**2
        focal = 160.0
        centre = WIDTH / 2 + focal * lateral / depth
        half = focal * 1.0 / depth
        ground = np.empty((HEIGHT - HORIZON, WIDTH, 3), dtype=np.int16)
        ground[:] = (70, 140, 60)
        ground += self.grass[:, :, None]
        road = np.abs(self.columns - centre) < half
        ground[road] = (105, 105, 110)
        stripe = (np.abs(self.columns - centre) < np.maximum(1.0, half * 0.06)) & (
            ((world.s + depth) % 2.0) < 1.0
        )
        ground[stripe] = (235, 235, 235)
        if world.cone is not None:
            distance = world.cone - world.s
            if 0.5 < distance < 40:
                row = round(60.0 / distance - 3.0)
                if 0 <= row < HEIGHT - HORIZON:
                    height = max(3, int(160.0 / distance))
                    cx = WIDTH / 2 + focal * (-world.x - world.heading * distance) / distance
                    top = max(0, row - height)
                    for r in range(top, row + 1):
                        w = (r - top + 1) / (row - top + 1) * height * 0.35 + 1
                        lo, hi = int(max(0, cx - w)), int(min(WIDTH, cx + w))
                        if lo < hi:
                            ground[r, lo:hi] = (245, 110, 20)
        image = np.concatenate([self.sky.astype(np.int16), ground], axis=0)
        image = image.astype(np.float32) * light
        clipped: np.ndarray = np.clip(image, 0, 255).astype(np.uint8)
        return clipped


def simulate_session(
    rng: random.Random,
    seconds: float,
    profile: str,
    offset_ms: float,
    fps: int,
    on_frame: Callable[[World, tuple[float, float, float], float], None],
) -> list[dict[str, Any]]:
    phases = (rng.uniform(0, 6.3), rng.uniform(0, 6.3), rng.uniform(0, 6.3))
    reaction_ms = rng.uniform(150, 300)
    world = World()
    history: list[tuple[float, float, float, float | None]] = []
    commands: list[dict[str, Any]] = []
    last_drive = -math.inf
    last_stop = -math.inf
    sent_turn, sent_speed = 0.0, 0.0
    moving = False
    stopped_for_cone = False
    idle_until = -math.inf
    next_idle = rng.uniform(30_000, 60_000)
    next_cone = rng.uniform(6_000, 14_000)
    light = 1.0
    frame_interval = 1000.0 / fps
    next_frame = offset_ms
    end_ms = seconds * 1000.0
    t = 0.0
    keepalive = KEEPALIVE_MS + rng.uniform(-10, 10)

    def send(kind: str, values: dict[str, float] | None = None) -> None:
        item: dict[str, Any] = {"t": round(t + rng.uniform(0, 4), 1), "type": kind}
        if values is not None:
            item["values"] = values
        commands.append(item)

    while t < end_ms:
        history.append((world.x, world.heading, world.s, world.cone))
        lag = min(len(history) - 1, int(reaction_ms / STEP_MS))
        seen_x, seen_heading, seen_s, seen_cone = history[-1 - lag]
        if len(history) > 100:
            del history[:50]
        cone_close = seen_cone is not None and seen_cone - seen_s < 4.0
        if t >= next_cone and world.cone is None and moving:
            world.cone = world.s + 16.0
            next_cone = t + rng.uniform(14_000, 26_000)
        if world.cone is not None and world.cone_clear_at is not None and t >= world.cone_clear_at:
            world.cone, world.cone_clear_at = None, None
        if t >= next_idle and moving and world.cone is None:
            idle_until = t + rng.uniform(3_000, 6_000)
            next_idle = t + rng.uniform(40_000, 70_000)
            send("drive", {"speed": 0.0, "turn": 0.0})
            sent_speed, sent_turn, moving = 0.0, 0.0, False
            world.speed, world.turn = 0.0, 0.0
            last_drive = t
        if cone_close:
            if not stopped_for_cone or t - last_stop >= keepalive:
                send("stop")
                last_stop = t
                if not stopped_for_cone:
                    world.cone_clear_at = t + rng.uniform(2_000, 3_500)
                stopped_for_cone = True
                moving = False
                world.speed, world.turn = 0.0, 0.0
        elif t >= idle_until:
            stopped_for_cone = False
            bend = curvature(seen_s + 3.0, phases)
            turn = bend * 0.9 - 0.8 * seen_x - 1.2 * seen_heading + rng.gauss(0, 0.03)
            speed = 0.75 - 0.3 * abs(bend)
            if profile == "keyboard":
                # Arrow keys: half or full turn; a key changes only on a clear need.
                if abs(turn - sent_turn) > 0.4:
                    sent_key = round(max(-1.0, min(1.0, turn)) * 2) / 2
                else:
                    sent_key = sent_turn
                turn, speed = sent_key, 0.6
            turn = round(max(-1.0, min(1.0, turn)), 2)
            speed = round(speed, 2)
            changed = abs(turn - sent_turn) > 0.15 or abs(speed - sent_speed) > 0.1
            if not moving or changed or t - last_drive >= keepalive:
                send("drive", {"speed": speed, "turn": turn})
                sent_speed, sent_turn, moving = speed, turn, True
                world.speed, world.turn = speed, turn
                last_drive = t
                keepalive = KEEPALIVE_MS + rng.uniform(-10, 10)
        # Physics.
        dt = STEP_MS / 1000.0
        world.s += world.speed * 4.0 * dt
        world.heading += (world.turn - curvature(world.s, phases)) * 0.8 * dt * (world.speed > 0)
        world.heading = max(-0.6, min(0.6, world.heading))
        world.x = max(-1.6, min(1.6, world.x + world.heading * world.speed * 4.0 * dt))
        while next_frame <= t:
            light = max(0.75, min(1.25, light + rng.gauss(0, 0.01)))
            on_frame(world, phases, light)
            next_frame += frame_interval
        t += STEP_MS
    return commands


def shuffle_times(commands: list[dict[str, Any]], rng: random.Random, end_ms: float) -> None:
    """Scramble commands over time: labels become unrelated to the image and to each other."""
    times = sorted(round(rng.uniform(0, end_ms), 1) for _ in commands)
    rng.shuffle(commands)
    for item, t in zip(commands, times, strict=True):
        item["t"] = t
    commands.sort(key=lambda item: item["t"])


def write_session(
    root: Path, session_id: str, index: int, seed: int, minutes: float, shuffle: bool
) -> dict[str, Any]:
    import av

    rng = random.Random(f"{seed}:{session_id}")
    fps = rng.choice((15, 20, 24))
    offset_ms = round(rng.uniform(40, 160), 1)
    profile = PROFILES[index % len(PROFILES)]
    rover = ROVERS[index % len(ROVERS)]
    directory = Layout(root).recording_dir(session_id)
    directory.mkdir(parents=True, exist_ok=True)
    renderer = Renderer(np.random.default_rng(rng.randrange(2**32)))
    video_path = directory / "camera.webm"
    temporary = directory / ".camera.webm.tmp"
    with av.open(str(temporary), mode="w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=fps)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.bit_rate = 600_000
        stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
        stream.codec_context.thread_count = 1
        frame_index = 0

        def on_frame(world: World, phases: tuple[float, float, float], light: float) -> None:
            nonlocal frame_index
            frame = av.VideoFrame.from_ndarray(renderer.frame(world, phases, light), format="rgb24")
            frame.pts = frame_index
            frame.time_base = Fraction(1, fps)
            frame_index += 1
            for packet in stream.encode(frame):
                container.mux(packet)

        commands = simulate_session(rng, minutes * 60, profile, offset_ms, fps, on_frame)
        for packet in stream.encode():
            container.mux(packet)
    os.replace(temporary, video_path)
    if shuffle:
        shuffle_times(commands, rng, minutes * 60_000)
    with open(directory / "commands.ndjson", "w") as stream_out:
        for item in commands:
            stream_out.write(json.dumps(item) + "\n")
    meta = {
        "format": FORMAT,
        "sessionId": session_id,
        "roverId": rover,
        "controlProfile": profile,
        "startedAt": "2026-11-01T12:00:00Z",
        "video": {"file": "camera.webm", "offsetMs": offset_ms},
        "commands": {"file": "commands.ndjson"},
        "commandRoles": {"stop": "stop", "drive": "movement"},
    }
    (directory / "session.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {"sessionId": session_id, "frames": frame_index, "commands": len(commands), "fps": fps}


def session_ids(count: int, seed: int) -> list[str]:
    """Deterministic ids with max(2, count // 5) held out when count allows it.

    A demo data set must exercise the held-out evaluation; the partition itself is the
    product's hash rule, the generator only picks names.
    """
    held_target = max(2, round(count / 5)) if count >= 4 else 0
    train_target = count - held_target
    chosen: list[str] = []
    held = train = 0
    candidate = 0
    while len(chosen) < count:
        name = f"drive-{seed}-{candidate:04d}"
        candidate += 1
        if is_held_out(name):
            if held < held_target or train >= train_target:
                chosen.append(name)
                held += 1
        elif train < train_target:
            chosen.append(name)
            train += 1
    return chosen


def _write_one(args: tuple[str, str, int, int, float, bool]) -> dict[str, Any]:
    root, session_id, index, seed, minutes, shuffle = args
    return write_session(Path(root), session_id, index, seed, minutes, shuffle)


def write_dataset(
    out: str,
    sessions: int,
    minutes: float,
    seed: int,
    *,
    shuffle_commands: bool = False,
    workers: int = 2,
) -> dict[str, Any]:
    import multiprocessing

    root = Path(out).resolve()
    Layout(root).recordings.mkdir(parents=True, exist_ok=True)
    ids = session_ids(sessions, seed)
    tasks = [(str(root), sid, i, seed, minutes, shuffle_commands) for i, sid in enumerate(ids)]
    if workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
            written = pool.map(_write_one, tasks)
    else:
        written = [_write_one(task) for task in tasks]
    job = default_job(root, ids, seed)
    job_path = root / "job.json"
    job_path.write_text(json.dumps(job, indent=2) + "\n")
    return {
        "root": str(root),
        "job": str(job_path),
        "sessions": written,
        "heldOut": [sid for sid in ids if is_held_out(sid)],
    }


def default_job(root: Path, sessions: list[str], seed: int) -> dict[str, Any]:
    return {
        "root": str(root),
        "sessions": sessions,
        "actionThreshold": 0.5,
        "seed": seed,
        "config": {
            "threads": 2,
            "maxJobSeconds": 600,
            "maxSamples": 12000,
            "minimumSamples": 256,
            "batchSize": 64,
            "passesPerJob": 20,
            "maxStepsPerJob": 100000,
            "checkpointEverySteps": 200,
            "minimumDrivingMinutes": 2,
            "newDrivingMinutesPerModel": 0.5,
            "evalEverySteps": 250,
        },
    }
