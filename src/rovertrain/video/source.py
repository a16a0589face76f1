"""The video side of a decode, shared by the sequential decode (`decode`), the segmented one
(`segment_decode`) and replay: opening a checked file, repairing frame times, writing one
converted frame per 100 ms tick, and the records both decodes return.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import av
from av.container import InputContainer
from av.video.frame import VideoFrame
from av.video.reformatter import VideoReformatter
from av.video.stream import VideoStream

from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH, TICK_MS
from rovertrain.runtime.frames import prepare_frame
from rovertrain.video.containers import describe_head, sniff_container
from rovertrain.video.decode_protocol import DecodeLimits

FRAME_BYTES = OBS_WIDTH * OBS_HEIGHT * OBS_CHANNELS
"""One converted tick frame in the window store (uint8, H×W×C)."""


def open_checked(path: Path, limits: DecodeLimits) -> tuple[str, int]:
    """(demuxer, size in bytes) of the video at `path`, read without following a link or
    blocking on a FIFO; SkipSession when it is too large or not an allowed container."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        head = os.pread(fd, 512, 0)
    finally:
        os.close(fd)
    if info.st_size > limits.max_bytes:
        raise SkipSession(
            "too_large",
            f"video is {info.st_size / 2**20:.0f} MiB, over the {limits.max_bytes / 2**20:.0f} MiB limit",
        )
    container = sniff_container(head)
    if container is None:
        raise SkipSession("invalid_recording", describe_head(head))
    return container, info.st_size


@dataclass(frozen=True)
class VideoSource:
    """A checked video to decode: its demuxer (`open_checked`), the session's offset of the
    video clock on the command clock, and the limits."""

    path: Path
    container_name: str
    offset_ms: float
    limits: DecodeLimits


class TickWriter:
    """Turns frames (in presentation order) into one converted frame per 100 ms tick."""

    def __init__(self, sink: BinaryIO, rotation: int):
        self.sink = sink
        self.rotation = rotation
        self.reformatter = VideoReformatter()
        self.ticks: list[int] = []
        self.frame_times: list[float] = []
        self.pending: VideoFrame | None = None
        self.pending_time = -math.inf
        self.pending_bytes: bytes | None = None
        self.next_tick: int | None = None

    def _convert(self) -> bytes:
        if self.pending_bytes is None:
            assert self.pending is not None
            # Full-size rgb24 here; rotation and resize are `prepare_frame`, as on the rover.
            rgb = self.reformatter.reformat(self.pending, format="rgb24", threads=1).to_ndarray()
            self.pending_bytes = prepare_frame(rgb, self.rotation).tobytes()
        return self.pending_bytes

    def _flush_until(self, limit: float, inclusive: bool) -> None:
        assert self.next_tick is not None
        while self.next_tick < limit or (inclusive and self.next_tick == limit):
            self.sink.write(self._convert())
            self.ticks.append(self.next_tick)
            self.frame_times.append(self.pending_time)
            self.next_tick += TICK_MS

    def add(self, frame: VideoFrame, time_ms: float) -> None:
        if self.pending is not None:
            self._flush_until(time_ms, inclusive=False)
        else:
            self.next_tick = math.ceil(time_ms / TICK_MS) * TICK_MS
        self.pending, self.pending_time, self.pending_bytes = frame, time_ms, None

    def finish(self) -> None:
        if self.pending is not None:
            self._flush_until(self.pending_time, inclusive=True)
            self.pending = None

    def finish_before(self, limit_ms: float) -> None:
        """End a segment: the ticks before `limit_ms`, the next segment's first frame time,
        as `add` of that frame would have written them."""
        if self.pending is not None:
            self._flush_until(limit_ms, inclusive=False)
            self.pending = None


class FrameClock:
    """Repairs presentation times as frames arrive.

    Browser recordings repeat timestamps: a repeated time stays as it is and the writer keeps
    the later frame for it (the newer picture). A time going backwards is dropped.
    """

    def __init__(self) -> None:
        self.last = -math.inf
        self.duplicates = 0
        self.backwards = 0

    def place(self, time_ms: float) -> float | None:
        if time_ms < self.last - 0.01:
            self.backwards += 1
            return None
        if time_ms <= self.last:
            self.duplicates += 1  # same time: the writer keeps this newer picture for it
            return self.last
        self.last = time_ms
        return time_ms


def frame_rotation(frame: VideoFrame) -> int:
    """The frame's display rotation in degrees, a multiple of 90 in [0, 360)."""
    try:
        angle = float(frame.rotation or 0)
    except (AttributeError, ValueError, TypeError):  # PyAV without display matrices
        return 0
    return round(angle / 90.0) * 90 % 360


@contextlib.contextmanager
def open_video(
    path: Path, container_name: str, limits: DecodeLimits
) -> Iterator[tuple[InputContainer, VideoStream]]:
    """The container and its first video stream, checked against the limits and set up to
    decode every picture as a plain decode does. Used by the decoder child and by replay
    alike."""
    try:
        container = av.open(
            str(path), format=container_name, options={"protocol_whitelist": "file"}
        )
    except (av.error.FFmpegError, OSError, ValueError) as error:
        raise SkipSession("decode_error", f"FFmpeg cannot open the video: {error}") from None
    with container:
        videos = container.streams.video
        if not videos:
            raise SkipSession("no_video", "the file has no video stream")
        stream = videos[0]
        context = stream.codec_context
        width, height = context.width or 0, context.height or 0
        if width * height > limits.max_pixels:
            raise SkipSession(
                "too_large", f"frames are {width}x{height}, over {limits.max_pixels} pixels"
            )
        duration = duration_seconds(container, stream)
        if duration is not None and duration > limits.max_seconds:
            raise SkipSession(
                "too_large",
                f"video lasts {duration / 3600:.1f} h, over {limits.max_seconds / 60:.0f} minutes",
            )
        # Codec threads change no pixel (H.264 and VP8 decode bit-exactly at any count).
        context.thread_count = max(1, limits.threads)
        context.thread_type = "AUTO"
        # A full decode, loop filter included, as a camera or a plain PyAV decode gives the
        # picture: skipping it moved VP8 tick frames by up to 31 levels at 96 px, and a trained
        # policy decided about 1% of ticks otherwise (docs/performance.md, "One pixel path").
        # max_pixels: the decoder itself refuses to allocate frames beyond the limit.
        context.options = {"max_pixels": str(limits.max_pixels)}
        yield container, stream


def duration_seconds(container: InputContainer, stream: VideoStream) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000
    return None


@dataclass(frozen=True)
class FrameCounts:
    """What a decode did with the video's frames, counted alike by both decodes."""

    decoded: int
    """Frames the codec returned, plus the skipped ones (a decode of every frame counts them)."""
    skipped: int
    """Pictures left out undecoded (`packet_scan.skippable_packets`) between the first and
    the last frame kept."""
    corrupt: int
    duplicates: int
    """Frames whose time repeated the one before (`FrameClock`)."""
    backwards: int
    """Frames dropped because their time went backwards."""
    rotation: int
    """Degrees the pictures are turned (`frame_rotation` of the first frame kept)."""
    segments: int
    """1 for the sequential decode; the segments' number for a segmented one."""
    errors: int = 0
    """FFmpeg errors that ended the decode (its prefix is kept): 0 or 1."""
    error_message: str | None = None


@dataclass(frozen=True)
class DecodedTicks:
    """A decode's outcome; the tick frames themselves are already in its sink."""

    counts: FrameCounts
    ticks: list[int]
    """Each written frame's tick (ms on the command clock)."""
    frame_times: list[float]
    """The time of the video frame shown at each tick."""
