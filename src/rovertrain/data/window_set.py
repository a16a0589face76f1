"""The window set: the 100 ms windows the model trains and is scored on, stored compactly.

Its own module, apart from the dataset that fills it (data/dataset.py), so that `learn/`,
which reads window sets only, imports neither the decoders nor PyAV (the `learn` import
contract in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import (
    MODEL_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data.windows import Labels


@dataclass
class WindowSet:
    """Windows stored compactly: uint8 frames and contiguous label arrays.

    `frames`: N×H×W×(3·k), each window's pictures as the model reads them along the channels,
    this tick's first, then the previous tick's (k = `FRAME_HISTORY`). Stored so, a training
    batch is one take; interleaving two arrays' pixels per batch cost more than the rest of
    the data path. k = 1 (test fixtures, still scenes): the previous picture is this one."""

    frames: np.ndarray
    states: np.ndarray
    fires: np.ndarray
    fires_next: np.ndarray  # uint8: the person's commands one window later (the gate's)
    values: np.ndarray
    available: np.ndarray
    category: np.ndarray
    session: np.ndarray  # int32: which session each window came from (0, 1, ... as added)

    def __len__(self) -> int:
        return len(self.category)

    def nbytes(self) -> int:
        arrays = (
            self.frames,
            self.states,
            self.fires,
            self.fires_next,
            self.values,
            self.available,
        )
        return sum(array.nbytes for array in arrays)

    def pictures(self, indices: np.ndarray | slice) -> np.ndarray:
        """The chosen windows' model pictures, n×H×W×`MODEL_CHANNELS` uint8."""
        frames = self.frames[indices]
        if frames.shape[3] == MODEL_CHANNELS:
            return np.ascontiguousarray(frames)
        return np.concatenate([frames] * (MODEL_CHANNELS // frames.shape[3]), axis=3)

    def subset(self, indices: np.ndarray | slice) -> WindowSet:
        return WindowSet(
            frames=self.frames[indices],
            states=self.states[indices],
            fires=self.fires[indices],
            fires_next=self.fires_next[indices],
            values=self.values[indices],
            available=self.available[indices],
            category=self.category[indices],
            session=self.session[indices],
        )


def empty_windows(capacity: int) -> WindowSet:
    return WindowSet(
        frames=np.empty((capacity, OBS_HEIGHT, OBS_WIDTH, MODEL_CHANNELS), dtype=np.uint8),
        states=np.empty((capacity, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32),
        fires=np.empty((capacity, SLOTS), dtype=np.uint8),
        fires_next=np.empty((capacity, SLOTS), dtype=np.uint8),
        values=np.empty((capacity, SLOTS, VALUES), dtype=np.float32),
        available=np.empty((capacity, SLOTS, VALUES), dtype=np.uint8),
        category=np.empty(capacity, dtype=np.int8),
        session=np.empty(capacity, dtype=np.int32),
    )


def model_pictures(frames: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """The model pictures of ticks `chosen` of a session's consecutive tick frames: each
    tick's frame, then the row before (the first tick's is its own, as at the runtime's first
    tick), along the channels."""
    return np.concatenate([frames[chosen], frames[np.maximum(chosen - 1, 0)]], axis=3)


def window_chunk(frames: np.ndarray, labels: Labels, indices: list[int]) -> WindowSet:
    """One session's chosen windows, copied out of its memory map."""
    chosen = np.asarray(indices, dtype=np.int64)
    return WindowSet(
        frames=model_pictures(frames, chosen),
        states=labels.states[chosen],
        fires=labels.fires[chosen],
        fires_next=labels.fires_next[chosen],
        values=labels.values[chosen],
        available=labels.available[chosen],
        category=labels.category[chosen],
        session=np.zeros(len(chosen), dtype=np.int32),
    )


class WindowSetBuilder:
    """Sessions' windows appended in the job's order into preallocated arrays."""

    def __init__(self, capacity: int):
        self.count = 0
        self.sessions = 0
        self.windows = empty_windows(capacity)

    def add(self, chunk: WindowSet) -> None:
        """One session's windows (each call is a new session)."""
        end = self.count + len(chunk)
        if end > len(self.windows):
            raise ValueError("window set capacity exceeded")
        window, target = slice(self.count, end), self.windows
        target.frames[window] = chunk.frames
        target.states[window] = chunk.states
        target.fires[window] = chunk.fires
        target.fires_next[window] = chunk.fires_next
        target.values[window] = chunk.values
        target.available[window] = chunk.available
        target.category[window] = chunk.category
        target.session[window] = self.sessions
        self.sessions += 1
        self.count = end

    def build(self) -> WindowSet:
        return self.windows.subset(slice(0, self.count))
