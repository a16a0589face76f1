"""Small in-memory window sets for the learn/ unit tests (no video, no subprocess)."""

from __future__ import annotations

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data.window_set import WindowSet


def learnable_windows(count: int, seed: int = 0) -> WindowSet:
    """Bright frames mean `drive` fires with speed 0.5; dark frames mean `stop` fires."""
    rng = np.random.default_rng(seed)
    bright = rng.random(count) < 0.5
    frames = np.where(bright[:, None, None, None], 200, 30).astype(np.uint8)
    frames = np.broadcast_to(frames, (count, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)).copy()
    fires = np.zeros((count, SLOTS), dtype=np.uint8)
    fires[bright, 1] = 1
    fires[~bright, 0] = 1
    values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
    values[bright, 1, 0] = 0.5
    available = np.zeros((count, SLOTS, VALUES), dtype=np.uint8)
    available[bright, 1, :2] = 1
    return WindowSet(
        frames=frames,
        states=rng.random((count, SLOTS * STATE_FEATURES_PER_SLOT)).astype(np.float32),
        fires=fires,
        fires_next=np.zeros_like(fires),  # independent windows: nothing follows
        values=values,
        available=available,
        category=np.where(bright, 1, 2).astype(np.int8),
        session=(np.arange(count) * 4 // max(1, count)).astype(np.int32),  # 4 sessions
    )
