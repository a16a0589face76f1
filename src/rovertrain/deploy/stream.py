"""A recording played back as the rover would see it: one full-size RGB frame per 100 ms tick.

Same tick rule as the training decoder (`video.source.TickWriter`): ticks are the multiples of
100 ms covered by the video, and each tick gets the newest frame at or before it (the later of
two frames with the same time). Same decoder settings too, so the pictures are bit-identical
for a video that decodes without errors (replay decodes every frame; training leaves out the
H.264 pictures no tick shows, which for such a video changes no tick: docs/recording-format.md);
the frames stay full size: resizing is the runtime's job (`prepare_frame`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
from av.video.frame import VideoFrame
from av.video.reformatter import VideoReformatter

from rovertrain.contracts.observation import TICK_MS
from rovertrain.video.decode_protocol import DecodeLimits
from rovertrain.video.source import FrameClock, frame_rotation, open_checked, open_video


@dataclass(frozen=True)
class TickFrame:
    tick: int  # ms on the command clock
    frame_time: float  # ms of the frame shown at this tick
    rgb: np.ndarray  # uint8 H×W×3, as decoded (not rotated, not resized)
    rotation: int


def tick_frames(path: Path, offset_ms: float, limits: DecodeLimits) -> Iterator[TickFrame]:
    container_name, _ = open_checked(path, limits)
    with open_video(path, container_name, limits) as (container, stream):
        reformatter = VideoReformatter()
        clock = FrameClock()
        pending: VideoFrame | None = None
        pending_time = -math.inf
        converted: np.ndarray | None = None
        rotation = 0
        next_tick = 0

        def current(frame: VideoFrame) -> np.ndarray:
            nonlocal converted  # converted once, however many ticks show the frame
            if converted is None:
                converted = reformatter.reformat(frame, format="rgb24", threads=1).to_ndarray()
            return converted

        try:
            for frame in container.decode(stream):
                if frame.is_corrupt or frame.time is None:
                    continue
                placed = clock.place(frame.time * 1000.0 + offset_ms)
                if placed is None:
                    continue
                if pending is not None:
                    while next_tick < placed:
                        yield TickFrame(next_tick, pending_time, current(pending), rotation)
                        next_tick += TICK_MS
                else:
                    next_tick = math.ceil(placed / TICK_MS) * TICK_MS
                    rotation = frame_rotation(frame)
                pending, pending_time, converted = frame, placed, None
        except (av.error.FFmpegError, ValueError, OSError, EOFError):
            pass  # damaged file: the prefix that decoded, as in training
        if pending is not None:
            while next_tick <= pending_time:
                yield TickFrame(next_tick, pending_time, current(pending), rotation)
                next_tick += TICK_MS
