"""Decode one session as keyframe-aligned segments on parallel threads (a lone new drive).

When the pool gives a child N > 1 threads, one decode with N codec threads leaves cores idle
where the codec cannot split its work (VP8 with one token partition) and scales by about
1.6x for H.264 frame threads on 2 cores. Here the video is cut at keyframes
(`segments.plan_segments`) and each segment is decoded by its own thread with a
single-threaded codec: N segments, N busy threads, the job's budget. PyAV releases the GIL
while FFmpeg demuxes, decodes and converts, so the threads run on separate cores.

The merged result must be what a sequential decode would write, byte for byte, so anything
unexpected refuses the segmented decode (`SegmentRefused`) and the caller decodes the session
sequentially: a decode error or a corrupt frame in any segment, a frame without a time, a
segment whose first kept frame is not its keyframe, frames of neighbouring segments that are
not in time order, rotations that differ, a video over the duration limit. Damaged files
therefore cost one wasted parallel attempt and then behave exactly as before.

The packets the sequential decode leaves out (`packet_scan.skippable_packets`: H.264 pictures
nothing references and no tick shows) are left out here too, and counted the same way.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from av.container import InputContainer
from av.packet import Packet
from av.video.frame import VideoFrame
from av.video.stream import VideoStream

from rovertrain.contracts.errors import SkipSession
from rovertrain.video.decode_protocol import DecodeLimits
from rovertrain.video.packet_scan import PacketScan, SkipPlan
from rovertrain.video.segments import Segment, plan_segments
from rovertrain.video.source import (
    DecodedTicks,
    FrameClock,
    FrameCounts,
    TickWriter,
    VideoSource,
    frame_rotation,
    open_video,
)

# Codecs whose keyframes are tested to restart decoding exactly
# (tests/video/test_segment_decode.py).
SEGMENTED_CODECS = frozenset({"h264", "vp8"})


STOPPED = "another segment failed"


class SegmentRefused(Exception):
    """This session is not decoded as segments; the message says why."""


@dataclass
class SegmentOutput:
    """What one segment's thread produced; its tick frames are in `scratch`."""

    scratch: BinaryIO
    frames: int = 0  # frames kept (inside the segment's time range)
    decoded: int = 0  # every frame the codec returned, for progress reports
    clock: FrameClock = field(default_factory=FrameClock)
    writer: TickWriter | None = None
    first_time: float | None = None
    rotation: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class SegmentJob:
    source: VideoSource
    segment: Segment
    first_position: int  # byte position of the segment's first packet (found after seeking)
    last_pts: int  # of the segment's last packet: the demuxer saw what the scan saw
    stop: threading.Event
    # Packets not to decode: offset from first_packet -> the pts the scan read for it.
    skip: dict[int, int] = field(default_factory=dict)


def decode_segment(job: SegmentJob, output: SegmentOutput) -> None:
    """Thread body: decode one segment into `output`; failures go to `output.error`."""
    try:
        _decode_segment(job, output)
    except SegmentRefused as refused:
        output.error = str(refused)
    except SkipSession as skip:
        output.error = f"{skip.code}: {skip.reason}"
    except Exception as error:  # any surprise (a bug too): decode sequentially instead
        output.error = f"{type(error).__name__}: {str(error)[:200]}"
    if output.error is not None:
        job.stop.set()


def _decode_segment(job: SegmentJob, output: SegmentOutput) -> None:
    segment, source = job.segment, job.source
    limits = replace(source.limits, threads=1)
    with open_video(source.path, source.container_name, limits) as (container, stream):
        packets = _packets_from(container, stream, segment, job.first_position)
        remaining = segment.end_packet - segment.first_packet
        last_pts = None
        for offset, packet in enumerate(packets):
            if job.stop.is_set():
                raise SegmentRefused(STOPPED)
            if packet.size == 0 and packet.pts is None:
                break  # the end-of-stream flush packet
            if offset in job.skip:
                _skip(job, output, packet, offset)
            else:
                for frame in packet.decode():
                    _keep(job, output, frame)
            remaining, last_pts = remaining - 1, packet.pts
            if remaining == 0:
                break
        if remaining != 0 or last_pts != job.last_pts:
            raise SegmentRefused("the demuxer did not return the scanned packets")
        for frame in stream.codec_context.decode(None):
            # Flushed frames carry no time base; the demuxer's flush packet would give them
            # the stream's, as in a sequential decode.
            if frame.time_base is None:
                frame.time_base = stream.time_base
            _keep(job, output, frame)
    if output.writer is None:
        raise SegmentRefused("the segment kept no frame")


def _skip(job: SegmentJob, output: SegmentOutput, packet: Packet[VideoStream], offset: int) -> None:
    """A packet the sequential decode leaves out too."""
    if packet.pts != job.skip[offset]:
        raise SegmentRefused("the demuxer did not return the scanned packets")
    output.decoded += 1


def _packets_from(
    container: InputContainer, stream: VideoStream, segment: Segment, position: int
) -> Iterator[Packet[VideoStream]]:
    """The demuxer positioned at the segment's first packet (the scan's byte position)."""
    if segment.first_packet == 0:
        return container.demux(stream)
    assert segment.start_pts is not None
    container.seek(segment.start_pts, stream=stream, backward=True)
    packets = container.demux(stream)
    for packet in packets:
        if packet.pos == position:
            return _chain(packet, packets)
        if packet.pos is None or packet.pos > position:
            break
    raise SegmentRefused("seeking did not reach the segment's keyframe")


def _chain(
    first: Packet[VideoStream], rest: Iterator[Packet[VideoStream]]
) -> Iterator[Packet[VideoStream]]:
    yield first
    yield from rest


def _keep(job: SegmentJob, output: SegmentOutput, frame: VideoFrame) -> None:
    """The sequential decoder's per-frame rule, for the frames of this segment's range."""
    segment = job.segment
    output.decoded += 1
    if frame.pts is None:
        raise SegmentRefused("a frame has no time")
    if segment.start_pts is not None and frame.pts < segment.start_pts:
        return  # a leading picture of an open GOP: the segment before decodes it
    if segment.end_pts is not None and frame.pts >= segment.end_pts:
        return  # the next segment's
    if frame.is_corrupt:
        raise SegmentRefused("a corrupt frame")
    if output.frames == 0 and segment.start_pts is not None and frame.pts != segment.start_pts:
        raise SegmentRefused("the segment's first frame is not its keyframe")
    output.frames += 1
    placed = output.clock.place(frame.time * 1000.0 + job.source.offset_ms)
    if placed is None:
        return
    if output.writer is None:
        if frame.width * frame.height > job.source.limits.max_pixels:
            raise SegmentRefused("frames over the pixel limit")
        output.rotation = frame_rotation(frame)
        output.writer = TickWriter(output.scratch, output.rotation)
        output.first_time = placed
    output.writer.add(frame, placed)


@dataclass(frozen=True)
class SegmentPlan:
    segments: list[Segment]
    scan: PacketScan


def plan_for(scan: PacketScan, codec: str, threads: int) -> SegmentPlan | None:
    """The segments for a scanned video; None: decode it sequentially."""
    if threads < 2 or codec not in SEGMENTED_CODECS:
        return None
    segments = plan_segments(scan.pts, scan.sizes, scan.keyframes, threads)
    return SegmentPlan(segments, scan) if len(segments) > 1 else None


def decode_segmented(
    source: VideoSource,
    plan: SegmentPlan,
    skip: SkipPlan,
    sink: BinaryIO,
    *,
    scratch_dir: Path | None,
    report_frames: Callable[[int], None],
) -> DecodedTicks:
    """Decode `source` as the planned segments, one thread each, into `sink`, leaving out the
    packets (scan indices) in `skip`; the merged outcome, counted as a sequential decode
    counts.

    Raises SegmentRefused, with the sink untouched, when the result might differ from a
    sequential decode."""
    scan = plan.scan
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        outputs = [
            SegmentOutput(stack.enter_context(tempfile.TemporaryFile(dir=scratch_dir)))
            for _ in plan.segments
        ]
        jobs = [
            SegmentJob(
                source=source,
                segment=segment,
                first_position=scan.positions[segment.first_packet],
                last_pts=scan.pts[segment.end_packet - 1],
                stop=stop,
                skip=skip.within(segment.first_packet, segment.end_packet),
            )
            for segment in plan.segments
        ]
        threads = [
            threading.Thread(
                target=decode_segment,
                args=(job, output),
                daemon=True,
                name=f"rovertrain-segment-{index}",
            )
            for index, (job, output) in enumerate(zip(jobs, outputs, strict=True))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)
                report_frames(sum(output.decoded for output in outputs))
        _merge(outputs, source.limits)
        try:
            for output in outputs:
                output.scratch.seek(0)
                shutil.copyfileobj(output.scratch, sink, 1 << 20)
        except OSError as error:
            sink.seek(0)
            sink.truncate()
            raise SegmentRefused(f"writing the frames failed: {error}") from None
    writers = [output.writer for output in outputs if output.writer is not None]
    # Every packet was fed or left out (no segment refused): count as the sequential decode.
    skipped = skip.counted(skip.packets, outputs[0].first_time, outputs[-1].clock.last)
    counts = FrameCounts(
        decoded=sum(output.frames for output in outputs) + skipped,
        skipped=skipped,
        corrupt=0,  # a corrupt frame refuses the segments
        duplicates=sum(output.clock.duplicates for output in outputs),
        backwards=sum(output.clock.backwards for output in outputs),
        rotation=writers[0].rotation,
        segments=len(plan.segments),
    )
    return DecodedTicks(
        counts=counts,
        ticks=[tick for writer in writers for tick in writer.ticks],
        frame_times=[time for writer in writers for time in writer.frame_times],
    )


def _merge(outputs: list[SegmentOutput], limits: DecodeLimits) -> None:
    """Check the segments join as a sequential decode would and finish their last ticks."""
    errors = [output.error for output in outputs if output.error is not None]
    if errors:
        # The first cause, not the segments that stopped because of it.
        raise SegmentRefused(min(errors, key=lambda error: error == STOPPED))
    writers = []
    for output in outputs:
        assert output.writer is not None and output.first_time is not None
        writers.append(output.writer)
    if len({output.rotation for output in outputs}) != 1:
        raise SegmentRefused("segments start with different rotations")
    for before, after in itertools.pairwise(outputs):
        assert after.first_time is not None
        if not after.first_time > before.clock.last:
            raise SegmentRefused("frames of neighbouring segments are out of order")
    first, last = outputs[0].first_time, outputs[-1].clock.last
    assert first is not None
    if last - first > limits.max_seconds * 1000:
        raise SegmentRefused("the video runs past the duration limit")
    for output, after in itertools.pairwise(outputs):
        assert output.writer is not None and after.first_time is not None
        output.writer.finish_before(after.first_time)
    assert outputs[-1].writer is not None
    outputs[-1].writer.finish()
