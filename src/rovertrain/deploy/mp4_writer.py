"""An H.264 MP4 written one RGB picture at a time: what `replay --out` (overlay.mp4) and
`drive --out` (rollout.mp4) both write, one picture per tick."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from av.container import OutputContainer
from av.video.stream import VideoStream


class Mp4Writer:
    """libx264 (yuv420p, veryfast, crf 26) at one picture per `frame_ms`. The file is opened
    at the first picture, whose size every later one must have (even width and height)."""

    def __init__(self, path: Path, frame_ms: int):
        self.path = path
        self.frame_ms = frame_ms
        self.output: tuple[OutputContainer, VideoStream] | None = None
        self.index = 0

    def _open(self, width: int, height: int) -> tuple[OutputContainer, VideoStream]:
        container = av.open(str(self.path), mode="w")
        stream = container.add_stream("libx264", rate=1000 // self.frame_ms)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.options = {"preset": "veryfast", "crf": "26"}
        return container, stream

    def add(self, rgb: np.ndarray) -> None:
        """One uint8 H×W×3 picture, shown for `frame_ms`."""
        if self.output is None:
            self.output = self._open(rgb.shape[1], rgb.shape[0])
        container, stream = self.output
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts, frame.time_base = self.index, Fraction(self.frame_ms, 1000)
        self.index += 1
        for packet in stream.encode(frame):
            container.mux(packet)

    def close(self) -> None:
        """Flush the encoder and close the file (nothing when no picture came)."""
        if self.output is not None:
            container, stream = self.output
            for packet in stream.encode():
                container.mux(packet)
            container.close()
            self.output = None
