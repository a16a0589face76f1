"""Decode one session's video into the frames of its 100 ms ticks (runs in a child process).

Only the newest frame at or before each tick is converted (one reused reformatter), and the
converted frames stream straight into a store entry's file, so memory stays flat however long the
recording is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import av
import numpy as np
from av.container import InputContainer
from av.video.frame import VideoFrame
from av.video.stream import VideoStream

from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import STALE_FRAME_MS
from rovertrain.video import segment_decode
from rovertrain.video.decode_protocol import DecodeLimits
from rovertrain.video.packet_scan import ScanFailed, SkipPlan, scan_packets, skippable_packets
from rovertrain.video.source import (
    DecodedTicks,
    FrameClock,
    FrameCounts,
    TickWriter,
    VideoSource,
    frame_rotation,
    open_checked,
    open_video,
)

# 2: H.264 pictures nothing references and no tick shows are not decoded (`packet_scan`).
# 3: the loop filter is applied (it was skipped): the frames of a plain decode, as the rover's
#    camera gives them. A store entry of an older version is decoded again, never mixed in.
DECODER_VERSION = 3


@dataclass(frozen=True)
class VideoInfo:
    """What the container says of the video, before any frame is decoded."""

    container: str
    """The demuxer chosen from the file's first bytes (`containers.sniff_container`)."""
    video_bytes: int
    codec: str
    width: int
    height: int
    fps: float | None
    streams: int


@dataclass(frozen=True)
class DecodeStats:
    """A decode's diagnostics: `stats` in the store entry's JSON and in the `dataset` event."""

    video: VideoInfo
    counts: FrameCounts
    decode_seconds: float
    stale_frame_windows: int
    """Ticks whose frame is older than STALE_FRAME_MS."""
    fallback: str | None = None
    """Why the video was not decoded as segments though it could have been."""

    def to_json(self) -> JsonObject:
        video, counts = self.video, self.counts
        document: JsonObject = {
            "container": video.container,
            "videoBytes": video.video_bytes,
            "framesDecoded": counts.decoded,
            "corruptFrames": counts.corrupt,
            "duplicateTimestamps": counts.duplicates,
            "backwardsTimestamps": counts.backwards,
            "decodeErrors": counts.errors,
            "framesSkipped": counts.skipped,
            "codec": video.codec,
            "width": video.width,
            "height": video.height,
            "fps": video.fps,
            "streams": video.streams,
        }
        if self.fallback is not None:
            document["decodeFallback"] = self.fallback
        document["decodeSegments"] = counts.segments
        document["rotation"] = counts.rotation
        if counts.error_message is not None:
            document["decodeErrorMessage"] = counts.error_message
        document["decodeSeconds"] = self.decode_seconds
        document["staleFrameWindows"] = self.stale_frame_windows
        return document


@dataclass(frozen=True)
class DecodeResult:
    """What `decode_to_file` wrote: the tick of each frame in the sink, and the diagnostics."""

    ticks: list[int]
    frame_times: list[float]
    stats: DecodeStats

    def to_json(self) -> JsonObject:
        """The store entry's JSON (the decoder child adds the key)."""
        return {
            "ticks": list(self.ticks),
            "frameTimes": list(self.frame_times),
            "stats": self.stats.to_json(),
        }


def decode_to_file(
    path: Path,
    offset_ms: float,
    limits: DecodeLimits,
    sink: BinaryIO,
    report_frames: Callable[[int], None] = lambda frames: None,
    scratch_dir: Path | None = None,
) -> DecodeResult:
    """Decode `path`, writing converted tick frames to `sink`; return ticks and diagnostics.

    With `limits.threads` > 1 an H.264 or VP8 video with keyframes spread through it is
    decoded as that many keyframe-aligned segments in parallel (`segment_decode`, scratch
    files in `scratch_dir`), with the result of a sequential decode; otherwise, or when the
    segments cannot promise that, sequentially with `limits.threads` codec threads. Either
    way H.264 pictures that nothing references and no tick shows are not decoded."""
    started = time.monotonic()
    container_name, size = open_checked(path, limits)
    source = VideoSource(path, container_name, offset_ms, limits)
    scan = None
    fallback: str | None = None
    with open_video(path, container_name, limits) as (container, stream):
        video = _video_info(container_name, size, container, stream)
        time_base = stream.time_base
        segmentable = limits.threads > 1 and video.codec in segment_decode.SEGMENTED_CODECS
        if (segmentable or video.codec == "h264") and time_base is not None:
            try:
                scan = scan_packets(container, stream)
            except ScanFailed as failed:
                if segmentable:
                    fallback = str(failed)
    skip = SkipPlan()
    plan = None
    if scan is not None and time_base is not None:
        skip = skippable_packets(scan, time_base, offset_ms)
        plan = segment_decode.plan_for(scan, video.codec, limits.threads)
    if plan is not None:
        try:
            merged = segment_decode.decode_segmented(
                source, plan, skip, sink, scratch_dir=scratch_dir, report_frames=report_frames
            )
        except segment_decode.SegmentRefused as refused:
            fallback = str(refused)
        else:
            return _result(video, merged, started, fallback)
    decoded = _decode_sequential(source, sink, report_frames, skip)
    return _result(video, decoded, started, fallback)


def _result(
    video: VideoInfo, decoded: DecodedTicks, started: float, fallback: str | None
) -> DecodeResult:
    late = np.asarray(decoded.ticks, dtype=np.int64) - np.asarray(decoded.frame_times)
    stats = DecodeStats(
        video=video,
        counts=decoded.counts,
        decode_seconds=round(time.monotonic() - started, 4),
        stale_frame_windows=int((late > STALE_FRAME_MS).sum()),
        fallback=fallback,
    )
    return DecodeResult(decoded.ticks, decoded.frame_times, stats)


def _video_info(
    container_name: str, size: int, container: InputContainer, stream: VideoStream
) -> VideoInfo:
    context = stream.codec_context
    return VideoInfo(
        container=container_name,
        video_bytes=size,
        codec=context.name,
        width=context.width or 0,
        height=context.height or 0,
        fps=_fps(stream),
        streams=len(container.streams),
    )


def _decode_sequential(
    source: VideoSource, sink: BinaryIO, report_frames: Callable[[int], None], skip: SkipPlan
) -> DecodedTicks:
    """Decode the frames in order with `limits.threads` codec threads, leaving out the
    packets in `skip`."""
    limits = source.limits
    with open_video(source.path, source.container_name, limits) as (container, stream):
        writer: TickWriter | None = None
        clock = FrameClock()
        first_time: float | None = None
        left_out: list[int] = []
        frames = corrupt = errors = 0
        error_message: str | None = None
        reported = time.monotonic()
        try:
            for frame in _frames(container, stream, skip.pts, left_out):
                frames += 1
                if time.monotonic() - reported >= 0.5:
                    report_frames(frames)
                    reported = time.monotonic()
                if frame.is_corrupt:
                    corrupt += 1
                    continue
                seconds: float | None = frame.time
                if seconds is None:
                    continue
                placed = clock.place(seconds * 1000.0 + source.offset_ms)
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
                    writer = TickWriter(sink, frame_rotation(frame))
                writer.add(frame, time_ms)
        except SkipSession:
            raise
        except (av.error.FFmpegError, ValueError, OSError, EOFError) as error:
            # Damaged files: keep the prefix that decoded.
            errors += 1
            error_message = str(error)[:300]
        skipped = skip.counted(left_out, first_time, clock.last)
        if writer is None:
            if error_message is not None:
                raise SkipSession("decode_error", f"no frame decoded: {error_message}")
            raise SkipSession("no_windows", "the video has no decodable frames")
        writer.finish()
    counts = FrameCounts(
        decoded=frames + skipped,
        skipped=skipped,
        corrupt=corrupt,
        duplicates=clock.duplicates,
        backwards=clock.backwards,
        rotation=writer.rotation,
        segments=1,
        errors=errors,
        error_message=error_message,
    )
    return DecodedTicks(counts, writer.ticks, writer.frame_times)


def _frames(
    container: InputContainer, stream: VideoStream, skip: dict[int, int], left_out: list[int]
) -> Iterator[VideoFrame]:
    """The stream's decoded frames, the packets in `skip` (index -> the pts the scan read)
    left out and listed in `left_out`."""
    skipping = bool(skip)
    for index, packet in enumerate(container.demux(stream)):
        if skipping and index in skip:
            if packet.pts == skip[index]:
                left_out.append(index)
                continue
            skipping = False  # the demuxer now disagrees with its scan: decode everything
        yield from packet.decode()


def _fps(stream: VideoStream) -> float | None:
    rate = stream.average_rate or stream.guessed_rate
    try:
        return round(float(rate), 3) if rate else None
    except (TypeError, ZeroDivisionError):
        return None
