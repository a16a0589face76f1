"""The windows `export` checks torch against onnxruntime on (its parity check): the model's
held-out sessions whose frames the window store still holds, simulated drives otherwise, and
random corners.

Simulated frames come from the simulator's renderer through `prepare_frame`, their states from
`StateTracker` over the simulated command stream: realistic pictures and command histories
even when the recordings the model was trained on are gone.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, Schema, validate_schema
from rovertrain.contracts.json_types import JsonValue
from rovertrain.contracts.observation import (
    MODEL_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
    TICK_MS,
)
from rovertrain.data.window_set import model_pictures
from rovertrain.runtime.frames import prepare_frame
from rovertrain.runtime.state import StateTracker
from rovertrain.sim.synth import simulate_session
from rovertrain.sim.worlds import build

Windows = tuple[np.ndarray, np.ndarray]
"""(uint8 N×H×W×C model pictures: each tick's frame, then the previous tick's; float32 N×S
states)."""


def _no_windows() -> Windows:
    return np.zeros((0, OBS_HEIGHT, OBS_WIDTH, MODEL_CHANNELS), np.uint8), np.zeros(
        (0, SLOTS * STATE_FEATURES_PER_SLOT), np.float32
    )


def _collector(rendered: list[np.ndarray]) -> Callable[[np.ndarray], None]:
    def on_frame(image: np.ndarray) -> None:
        rendered.append(prepare_frame(image))

    return on_frame


def synthetic_windows(schema: Schema, count: int, seed: int = 0) -> Windows:
    """`count` windows from simulated drives."""
    if count <= 0:
        return _no_windows()
    frames: list[np.ndarray] = []
    states: list[np.ndarray] = []
    drive = 0
    while len(frames) < count:
        rng = random.Random(f"{seed}-{drive}")
        rendered: list[np.ndarray] = []
        scenario = build("road", rng, "gamepad", seed + drive)
        seconds = min(60.0, (count - len(frames)) * TICK_MS / 1000 + 1)
        commands = simulate_session(scenario, seconds, 0.0, 10, _collector(rendered))
        commands.sort(key=lambda item: item["t"])
        tracker = StateTracker(schema)
        position = 0
        for index, frame in enumerate(rendered):
            tick = index * TICK_MS
            while position < len(commands) and commands[position]["t"] < tick:
                item = commands[position]
                tracker.observe(item["t"], item["type"], item.get("values") or {})
                position += 1
            frames.append(np.concatenate([frame, rendered[max(index - 1, 0)]], axis=2))
            states.append(tracker.state_at(tick))
        drive += 1
    return np.stack(frames[:count]), np.stack(states[:count])


def noise_windows(count: int, state_size: int, seed: int = 0) -> Windows:
    """Random pictures and random (in-range) states: the corners the drives do not reach."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (count, OBS_HEIGHT, OBS_WIDTH, MODEL_CHANNELS), dtype=np.uint8)
    states = rng.uniform(-1.0, 1.0, (count, state_size)).astype(np.float32)
    return frames, states


def held_out_windows(checkpoint: Path, meta: Mapping[str, JsonValue], limit: int) -> Windows:
    """Windows of the model's held-out sessions, from the window store of its data root.

    The checkpoint lives in `root/training/checkpoints/<id>`; only sessions whose store entry
    still matches their recording are used, and any session that cannot be read is passed
    over (the recordings may be gone): the caller fills up with synthetic windows.
    """
    from rovertrain.contracts.observation import STALE_FRAME_MS
    from rovertrain.data.partition import is_held_out
    from rovertrain.data.recording import load_recording, read_command_log
    from rovertrain.data.window_store import entries
    from rovertrain.data.windows import label_windows

    root = checkpoint.parent.parent.parent
    specification = meta.get("specification")
    schema = validate_schema(
        specification.get("schema") if isinstance(specification, dict) else None
    )
    frames: list[np.ndarray] = []
    states: list[np.ndarray] = []
    listed = meta.get("sourceSessions")
    sources = listed if isinstance(listed, list) else []
    sessions = [s for s in sources if isinstance(s, str) and is_held_out(s)]
    for session_id in sessions:
        if sum(len(chunk) for chunk in frames) >= limit:
            break
        try:
            recording = load_recording(root, session_id)
            stored = entries.load(entries.entry_for(root, recording))
            if stored is None:
                continue
            labels = label_windows(stored.ticks, read_command_log(recording).commands, schema)
        except Exception:  # a recording that is gone or damaged: synthetic windows instead
            continue
        usable = (stored.ticks - stored.frame_times <= STALE_FRAME_MS) & ~labels.unsupported
        chosen = np.flatnonzero(usable)[: limit - sum(len(chunk) for chunk in frames)]
        frames.append(model_pictures(np.asarray(stored.frames), chosen))
        states.append(labels.states[chosen])
    if not frames:
        return _no_windows()
    return np.concatenate(frames), np.concatenate(states)
