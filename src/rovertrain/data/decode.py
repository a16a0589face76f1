"""Decode one session's video into the frames of its 100 ms ticks (runs in a child process).

Only the newest frame at or before each tick is converted (one reused reformatter), and the
converted frames stream straight into a cache file, so memory stays flat however long the
recording is.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STALE_FRAME_MS,
    TICK_MS,
)
from rovertrain.data.containers import describe_head, sniff_container
from rovertrain.data.decode_protocol import DecodeLimits
from rovertrain.data.packet_scan import ScanFailed, SkipPlan, scan_packets, skippable_packets
from rovertrain.runtime.frames import prepare_frame

# 2: H.264 pictures nothing references and no tick shows are not decoded (`packet_scan`).
DECODER_VERSION = 2


def open_checked(path: Path, limits: DecodeLimits) -> tuple[str, int]:
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


class TickWriter:
    """Turns frames (in presentation order) into one converted frame per 100 ms tick."""

    def __init__(self, sink: BinaryIO, rotation: int):
        self.sink = sink
        self.rotation = rotation
        self.reformatter = VideoReformatter()
        self.ticks: list[int] = []
        self.frame_times: list[float] = []
        self.pending: Any = None
        self.pending_time = -math.inf
        self.pending_bytes: bytes | None = None
        self.next_tick: int | None = None

    def _convert(self) -> bytes:
        if self.pending_bytes is None:
            # Full-size rgb24 here; rotation and resize are `prepare_frame`, as on the rover.
            rgb: Any = self.reformatter.reformat(
                self.pending, format="rgb24", threads=1
            ).to_ndarray()
            self.pending_bytes = prepare_frame(rgb, self.rotation).tobytes()
        return self.pending_bytes

    def _flush_until(self, limit: float, inclusive: bool) -> None:
        assert self.next_tick is not None
        while self.next_tick < limit or (inclusive and self.next_tick == limit):
            self.sink.write(self._convert())
            self.ticks.append(self.next_tick)
            self.frame_times.append(self.pending_time)
            self.next_tick += TICK_MS

    def add(self, frame: Any, time_ms: float) -> None:
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


def frame_rotation(frame: Any) -> int:
    try:
        angle = float(frame.rotation or 0)
    except (AttributeError, ValueError, TypeError):
        return 0
    return round(angle / 90.0) * 90 % 360


@contextlib.contextmanager
def open_video(path: Path, container_name: str, limits: DecodeLimits) -> Iterator[tuple[Any, Any]]:
    """The container and its first video stream, checked against the limits and set up to
    decode for 96 px ticks. Used by the decoder child and by replay alike."""
    try:
        container = av.open(
            str(path), format=container_name, options={"protocol_whitelist": "file"}
        )
    except (av.error.FFmpegError, OSError, ValueError) as error:
        raise SkipSession("decode_error", f"FFmpeg cannot open the video: {error}") from None
    with container:
        videos = [stream for stream in container.streams if stream.type == "video"]
        if not videos:
            raise SkipSession("no_video", "the file has no video stream")
        stream = videos[0]
        context: Any = stream.codec_context
        width, height = context.width or 0, context.height or 0
        if width * height > limits.max_pixels:
            raise SkipSession(
                "too_large", f"frames are {width}x{height}, over {limits.max_pixels} pixels"
            )
        duration = _duration_seconds(container, stream)
        if duration is not None and duration > limits.max_seconds:
            raise SkipSession(
                "too_large",
                f"video lasts {duration / 3600:.1f} h, over {limits.max_seconds / 60:.0f} minutes",
            )
        context.thread_count = max(1, limits.threads)
        context.thread_type = "AUTO"
        # The policy sees 96 px frames; deblocking is invisible at that size.
        # max_pixels: the decoder itself refuses to allocate frames beyond the limit.
        context.options = {"skip_loop_filter": "all", "max_pixels": str(limits.max_pixels)}
        yield container, stream


def decode_to_file(
    path: Path,
    offset_ms: float,
    limits: DecodeLimits,
    sink: BinaryIO,
    report_frames: Callable[[int], None] = lambda frames: None,
    scratch_dir: Path | None = None,
) -> dict[str, Any]:
    """Decode `path`, writing converted tick frames to `sink`; return ticks and diagnostics.

    With `limits.threads` > 1 an H.264 or VP8 video with keyframes spread through it is
    decoded as that many keyframe-aligned segments in parallel (`segment_decode`, scratch
    files in `scratch_dir`), with the result of a sequential decode; otherwise, or when the
    segments cannot promise that, sequentially with `limits.threads` codec threads. Either
    way H.264 pictures that nothing references and no tick shows are not decoded."""
    # segment_decode builds on this module's TickWriter and FrameClock.
    from rovertrain.data import segment_decode

    started = time.monotonic()
    container_name, size = open_checked(path, limits)
    stats: dict[str, Any] = {
        "container": container_name,
        "videoBytes": size,
        "framesDecoded": 0,
        "corruptFrames": 0,
        "duplicateTimestamps": 0,
        "backwardsTimestamps": 0,
        "decodeErrors": 0,
        "framesSkipped": 0,
    }
    scan = None
    with open_video(path, container_name, limits) as (container, stream):
        stats.update(_video_stats(container, stream))
        codec, time_base = stream.codec_context.name, stream.time_base
        segmentable = limits.threads > 1 and codec in segment_decode.SEGMENTED_CODECS
        if segmentable or codec == "h264":
            try:
                scan = scan_packets(container, stream)
            except ScanFailed as failed:
                if segmentable:
                    stats["decodeFallback"] = str(failed)
    skip = SkipPlan()
    plan = None
    if scan is not None:
        skip = skippable_packets(scan, time_base, offset_ms)
        plan = segment_decode.plan_for(scan, codec, limits.threads)
    if plan is not None:
        try:
            merged = segment_decode.decode_segmented(
                path, container_name, offset_ms, limits, plan, skip, sink, scratch_dir,
                report_frames,
            )  # fmt: skip
        except segment_decode.SegmentRefused as refused:
            stats["decodeFallback"] = str(refused)
        else:
            stats.update(
                framesDecoded=merged.frames,
                framesSkipped=merged.skipped,
                duplicateTimestamps=merged.duplicates,
                backwardsTimestamps=merged.backwards,
                rotation=merged.rotation,
                decodeSegments=merged.segments,
            )
            return _result(stats, started, merged.ticks, merged.frame_times)
    stats["decodeSegments"] = 1
    writer = _decode_sequential(
        path, container_name, offset_ms, limits, sink, report_frames, stats, skip
    )
    return _result(stats, started, writer.ticks, writer.frame_times)


def _result(
    stats: dict[str, Any], started: float, ticks: list[int], frame_times: list[float]
) -> dict[str, Any]:
    stats["decodeSeconds"] = round(time.monotonic() - started, 4)
    late = np.asarray(ticks, dtype=np.int64) - np.asarray(frame_times)
    stats["staleFrameWindows"] = int((late > STALE_FRAME_MS).sum())
    return {"ticks": ticks, "frameTimes": frame_times, "stats": stats}


def _video_stats(container: Any, stream: Any) -> dict[str, Any]:
    context: Any = stream.codec_context
    return {
        "codec": context.name,
        "width": context.width or 0,
        "height": context.height or 0,
        "fps": _fps(stream),
        "streams": len(container.streams),
    }


def _decode_sequential(
    path: Path,
    container_name: str,
    offset_ms: float,
    limits: DecodeLimits,
    sink: BinaryIO,
    report_frames: Callable[[int], None],
    stats: dict[str, Any],
    skip: SkipPlan,
) -> TickWriter:
    """Decode the frames in order with `limits.threads` codec threads, leaving out the
    packets in `skip`."""
    with open_video(path, container_name, limits) as (container, stream):
        writer: TickWriter | None = None
        clock = FrameClock()
        first_time: float | None = None
        left_out: list[int] = []
        reported = time.monotonic()
        try:
            frame: Any
            for frame in _frames(container, stream, skip.pts, left_out):
                stats["framesDecoded"] += 1
                if time.monotonic() - reported >= 0.5:
                    report_frames(stats["framesDecoded"])
                    reported = time.monotonic()
                if frame.is_corrupt:
                    stats["corruptFrames"] += 1
                    continue
                seconds = frame.time
                if seconds is None:
                    continue
                placed = clock.place(seconds * 1000.0 + offset_ms)
                if placed is None:
                    continue
                time_ms = placed
                if first_time is None:
                    first_time = time_ms
                if time_ms - first_time > limits.max_seconds * 1000:
                    raise SkipSession("too_large", "video runs past the duration limit")
                if writer is None:
                    if frame.width * frame.height > limits.max_pixels:
                        raise SkipSession(
                            "too_large", f"frames are {frame.width}x{frame.height}, too many pixels"
                        )
                    rotation = frame_rotation(frame)
                    stats["rotation"] = rotation
                    writer = TickWriter(sink, rotation)
                writer.add(frame, time_ms)
        except SkipSession:
            raise
        except (av.error.FFmpegError, ValueError, OSError, EOFError) as error:
            # Damaged files: keep the prefix that decoded.
            stats["decodeErrors"] += 1
            stats["decodeErrorMessage"] = str(error)[:300]
        stats["framesSkipped"] = skip.counted(left_out, first_time, clock.last)
        stats["framesDecoded"] += stats["framesSkipped"]
        stats["duplicateTimestamps"] = clock.duplicates
        stats["backwardsTimestamps"] = clock.backwards
        if writer is None:
            if stats["decodeErrors"]:
                raise SkipSession(
                    "decode_error", f"no frame decoded: {stats['decodeErrorMessage']}"
                )
            raise SkipSession("no_windows", "the video has no decodable frames")
        writer.finish()
    return writer


def _frames(
    container: Any, stream: Any, skip: dict[int, int], left_out: list[int]
) -> Iterator[Any]:
    """The stream's decoded frames, the packets in `skip` (index -> the pts the scan read)
    left out and listed in `left_out`."""
    skipping = bool(skip)
    packet: Any
    for index, packet in enumerate(container.demux(stream)):
        if skipping and index in skip:
            if packet.pts == skip[index]:
                left_out.append(index)
                continue
            skipping = False  # the demuxer now disagrees with its scan: decode everything
        yield from packet.decode()


def _duration_seconds(container: Any, stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000
    return None


def _fps(stream: Any) -> float | None:
    rate = stream.average_rate or stream.guessed_rate
    try:
        return round(float(rate), 3) if rate else None
    except (TypeError, ZeroDivisionError):
        return None


FRAME_BYTES = OBS_WIDTH * OBS_HEIGHT * OBS_CHANNELS
