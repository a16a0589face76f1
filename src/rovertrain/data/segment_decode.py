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

H.264 pictures that no other picture references and no tick shows (most of x264's B-frames
at 30 fps) are not fed to the codec at all (`h264_nal`, `tick_visibility`). They still count
in `frames`, as the sequential decode counts them; a segment that skipped any checks that
every other frame of its time range came back from the codec, in time order, or refuses.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import av

from rovertrain.data.decode import FrameClock, TickWriter, frame_rotation, open_video
from rovertrain.data.decode_protocol import DecodeLimits
from rovertrain.data.h264_nal import avcc_length_size, is_disposable
from rovertrain.data.segments import Segment, plan_segments
from rovertrain.data.tick_visibility import invisible_frames
from rovertrain.errors import SkipSession

# Codecs whose keyframes are tested to restart decoding exactly
# (tests/data/test_segment_decode.py).
SEGMENTED_CODECS = frozenset({"h264", "vp8"})


STOPPED = "another segment failed"


class SegmentRefused(Exception):
    """This session is not decoded as segments; the message says why."""


@dataclass(frozen=True)
class PacketScan:
    """The video stream's packets in decode order (the demuxer's view, nothing decoded)."""

    pts: list[int]
    sizes: list[int]
    positions: list[int]
    keyframes: list[int]  # indices of keyframes with a known byte position
    disposable: list[bool]  # no other picture references it (H.264 only; else all False)


def scan_packets(container: Any, stream: Any) -> PacketScan:
    scan = PacketScan([], [], [], [], [])
    length_size = None
    if stream.codec_context.name == "h264":
        length_size = avcc_length_size(stream.codec_context.extradata)
    try:
        packet: Any
        for packet in container.demux(stream):
            if packet.size == 0 and packet.pts is None:
                continue  # the end-of-stream flush packet
            if packet.pts is None:
                raise SegmentRefused("a packet has no presentation time")
            if packet.is_keyframe and packet.pos is not None and packet.pos >= 0:
                scan.keyframes.append(len(scan.pts))
            scan.pts.append(packet.pts)
            scan.sizes.append(packet.size)
            scan.positions.append(-1 if packet.pos is None else packet.pos)
            scan.disposable.append(
                length_size is not None
                and not packet.is_keyframe
                and is_disposable(memoryview(packet), length_size)
            )
    except (av.error.FFmpegError, ValueError, OSError, EOFError) as error:
        raise SegmentRefused(f"the demuxer failed: {str(error)[:200]}") from None
    return scan


@dataclass
class SegmentOutput:
    """What one segment's thread produced; its tick frames are in `scratch`."""

    scratch: BinaryIO
    frames: int = 0  # frames kept (inside the segment's time range)
    decoded: int = 0  # every frame the codec returned, for progress reports
    kept_pts: list[int] = field(default_factory=list)
    skipped_pts: list[int] = field(default_factory=list)  # in the range, not decoded
    clock: FrameClock = field(default_factory=FrameClock)
    writer: TickWriter | None = None
    first_time: float | None = None
    rotation: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class SegmentJob:
    path: Path
    container_name: str
    offset_ms: float
    limits: DecodeLimits
    segment: Segment
    first_position: int  # byte position of the segment's first packet (found after seeking)
    last_pts: int  # of the segment's last packet: the demuxer saw what the scan saw
    stop: threading.Event
    packet_pts: tuple[int, ...] = ()  # the scan's, for packets first_packet..end_packet-1
    skip: frozenset[int] = frozenset()  # offsets into packet_pts not to decode
    # pts -> time the skip decision used, for every packet of the segment when any segment
    # skips: a skipped frame's successor may be the next segment's first frame.
    decided_ms: dict[int, float] = field(default_factory=dict)

    def in_range(self, pts: int) -> bool:
        start, end = self.segment.start_pts, self.segment.end_pts
        return (start is None or pts >= start) and (end is None or pts < end)


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
    segment = job.segment
    limits = replace(job.limits, threads=1)
    with open_video(job.path, job.container_name, limits) as (container, stream):
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
    if job.decided_ms:
        _check_skipping(job, output)


def _skip(job: SegmentJob, output: SegmentOutput, packet: Any, offset: int) -> None:
    if packet.pts != job.packet_pts[offset]:
        raise SegmentRefused("the demuxer did not return the scanned packets")
    output.decoded += 1
    if job.in_range(packet.pts):
        output.skipped_pts.append(packet.pts)


def _check_skipping(job: SegmentJob, output: SegmentOutput) -> None:
    """Skipping was decided from the scan: the frames the codec returned must be the scan's
    (the ones after a skipped frame decide that no tick shows it), one per time, in order.
    Checked in every segment, skipping or not, when any segment skips."""
    expected = sorted(pts for pts in job.packet_pts if job.in_range(pts))
    if sorted(output.kept_pts + output.skipped_pts) != expected:
        raise SegmentRefused("the codec did not return the frames the skipping relied on")
    if output.clock.duplicates or output.clock.backwards:
        raise SegmentRefused("frame times repeat or go back where frames were skipped")


def _packets_from(container: Any, stream: Any, segment: Segment, position: int) -> Any:
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


def _chain(first: Any, rest: Any) -> Any:
    yield first
    yield from rest


def _keep(job: SegmentJob, output: SegmentOutput, frame: Any) -> None:
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
    output.kept_pts.append(frame.pts)
    time_ms = frame.time * 1000.0 + job.offset_ms
    if job.decided_ms and job.decided_ms.get(frame.pts) != time_ms:
        raise SegmentRefused("a frame's time is not the one the skipping used")
    placed = output.clock.place(time_ms)
    if placed is None:
        return
    if output.writer is None:
        if frame.width * frame.height > job.limits.max_pixels:
            raise SegmentRefused("frames over the pixel limit")
        output.rotation = frame_rotation(frame)
        output.writer = TickWriter(output.scratch, output.rotation)
        output.first_time = placed
    output.writer.add(frame, placed)


@dataclass(frozen=True)
class SegmentedDecode:
    """The merged outcome; the tick frames are already in the sink."""

    segments: int
    frames: int  # skipped ones included, as a sequential decode counts them
    skipped: int
    duplicates: int
    backwards: int
    rotation: int
    ticks: list[int]
    frame_times: list[float]


@dataclass(frozen=True)
class SegmentPlan:
    segments: list[Segment]
    scan: PacketScan
    time_base: Any  # the stream's (a Fraction), for the packets' times

    def packet_times_ms(self, offset_ms: float) -> list[float]:
        """The times the decoder's frames will have, bit for bit: PyAV's `Frame.time` is
        float(pts) * num / den, and the tick writer adds the offset to it in milliseconds."""
        num, den = self.time_base.numerator, self.time_base.denominator
        return [float(pts) * num / den * 1000.0 + offset_ms for pts in self.scan.pts]

    def invisible_packets(self, times_ms: list[float]) -> frozenset[int]:
        """Packets (scan indices) that neither a tick nor another picture needs."""
        if not any(self.scan.disposable):
            return frozenset()
        return invisible_frames(times_ms, self.scan.disposable)


def plan_for(container: Any, stream: Any, threads: int) -> SegmentPlan | None:
    """The segments for an opened video (its demuxer is used up); None: decode sequentially.
    Raises SegmentRefused when the packets cannot be scanned."""
    if threads < 2 or stream.codec_context.name not in SEGMENTED_CODECS:
        return None
    scan = scan_packets(container, stream)
    segments = plan_segments(scan.pts, scan.sizes, scan.keyframes, threads)
    return SegmentPlan(segments, scan, stream.time_base) if len(segments) > 1 else None


def decode_segmented(
    path: Path,
    container_name: str,
    offset_ms: float,
    limits: DecodeLimits,
    plan: SegmentPlan,
    sink: BinaryIO,
    scratch_dir: Path | None,
    report_frames: Callable[[int], None],
) -> SegmentedDecode:
    """Decode `path` as the planned segments, one thread each, into `sink`.

    Raises SegmentRefused, with the sink untouched, when the result might differ from a
    sequential decode."""
    scan = plan.scan
    stop = threading.Event()
    times_ms = plan.packet_times_ms(offset_ms)
    invisible = plan.invisible_packets(times_ms)
    with contextlib.ExitStack() as stack:
        outputs = [
            SegmentOutput(stack.enter_context(tempfile.TemporaryFile(dir=scratch_dir)))
            for _ in plan.segments
        ]
        jobs = [
            SegmentJob(path, container_name, offset_ms, limits, segment,
                       scan.positions[segment.first_packet], scan.pts[segment.end_packet - 1],
                       stop, tuple(scan.pts[segment.first_packet : segment.end_packet]),
                       frozenset(index - segment.first_packet for index in invisible
                                 if segment.first_packet <= index < segment.end_packet),
                       dict(zip(scan.pts[segment.first_packet : segment.end_packet],
                                times_ms[segment.first_packet : segment.end_packet],
                                strict=True)) if invisible else {})
            for segment in plan.segments
        ]  # fmt: skip
        threads = [
            threading.Thread(target=decode_segment, args=(job, output), daemon=True,
                             name=f"rovertrain-segment-{index}")
            for index, (job, output) in enumerate(zip(jobs, outputs, strict=True))
        ]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)
                report_frames(sum(output.decoded for output in outputs))
        _merge(outputs, limits)
        try:
            for output in outputs:
                output.scratch.seek(0)
                shutil.copyfileobj(output.scratch, sink, 1 << 20)
        except OSError as error:
            sink.seek(0)
            sink.truncate()
            raise SegmentRefused(f"writing the frames failed: {error}") from None
    writers = [output.writer for output in outputs if output.writer is not None]
    return SegmentedDecode(
        segments=len(plan.segments),
        frames=sum(output.frames + len(output.skipped_pts) for output in outputs),
        skipped=sum(len(output.skipped_pts) for output in outputs),
        duplicates=sum(output.clock.duplicates for output in outputs),
        backwards=sum(output.clock.backwards for output in outputs),
        rotation=writers[0].rotation,
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
