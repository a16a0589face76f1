"""Held-out-like windows for checking an export: synthetic drives through the shared code.

Frames come from the simulator's renderer and go through `prepare_frame`; states come from
`StateTracker` over the simulated command stream. So the check exercises realistic pictures
and command histories even when the recordings the model was trained on are gone.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rovertrain.data.observation import TICK_MS
from rovertrain.runtime.frames import prepare_frame
from rovertrain.runtime.state import StateTracker
from rovertrain.sim.synth import Renderer, World, simulate_session


def _collector(
    renderer: Renderer, rendered: list[np.ndarray]
) -> Callable[[World, tuple[float, float, float], float], None]:
    def on_frame(world: World, phases: tuple[float, float, float], light: float) -> None:
        rendered.append(prepare_frame(renderer.frame(world, phases, light)))

    return on_frame


def synthetic_windows(
    schema: Sequence[dict[str, Any]], count: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 N×H×W×C frames, float32 N×S states) from simulated drives."""
    frames: list[np.ndarray] = []
    states: list[np.ndarray] = []
    drive = 0
    while len(frames) < count:
        rng = random.Random(f"{seed}-{drive}")
        rendered: list[np.ndarray] = []
        on_frame = _collector(Renderer(np.random.default_rng(seed + drive)), rendered)
        seconds = min(60.0, (count - len(frames)) * TICK_MS / 1000 + 1)
        commands = simulate_session(rng, seconds, "gamepad", 0.0, 10, on_frame)
        commands.sort(key=lambda item: item["t"])
        tracker = StateTracker(schema)
        position = 0
        for index, frame in enumerate(rendered):
            tick = index * TICK_MS
            while position < len(commands) and commands[position]["t"] < tick:
                item = commands[position]
                tracker.observe(item["t"], item["type"], item.get("values") or {})
                position += 1
            frames.append(frame)
            states.append(tracker.state_at(tick))
        drive += 1
    return np.stack(frames[:count]), np.stack(states[:count])


def noise_windows(count: int, state_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random pictures and random (in-range) states: the corners the drives do not reach."""
    from rovertrain.data.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH

    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (count, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS), dtype=np.uint8)
    states = rng.uniform(-1.0, 1.0, (count, state_size)).astype(np.float32)
    return frames, states
