"""The video stream's packets in decode order, read by the demuxer alone (nothing decoded):
where segments may be cut, and which H.264 pictures need no decoding.

Skipping is part of what a decode is (since `decode.DECODER_VERSION` 2): the sequential
decode and the segmented one leave out the same packets, so they keep writing the same result; a
video that decodes without errors, its frames in time order, writes the same tick frames as a
decode of every frame (tests/video/test_frame_skipping.py; docs/recording-format.md says what
differs otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

import av
from av.container import InputContainer
from av.video.stream import VideoStream

from rovertrain.video.h264_nal import avcc_length_size, is_disposable
from rovertrain.video.tick_visibility import invisible_frames


class ScanFailed(Exception):
    """The demuxer could not read the packets through; the message says why."""


@dataclass(frozen=True)
class PacketScan:
    pts: list[int]
    sizes: list[int]
    positions: list[int]
    keyframes: list[int]  # indices of keyframes with a known byte position
    disposable: list[bool]  # no other picture references it (H.264 only; else all False)
    # The demuxer marks it to be decoded and thrown away (an MP4 edit list trimming the
    # video): its frame is never returned, so it is nobody's successor.
    discarded: list[bool] = field(default_factory=list)


@dataclass(frozen=True)
class SkipPlan:
    """The packets (scan indices) a decode leaves out, with the pts the scan read for each (the
    demuxer must return the same) and their frames' times."""

    pts: dict[int, int] = field(default_factory=dict)
    times_ms: dict[int, float] = field(default_factory=dict)

    @property
    def packets(self) -> frozenset[int]:
        return frozenset(self.times_ms)

    def counted(self, left_out: Iterable[int], first_ms: float | None, last_ms: float) -> int:
        """The left-out frames a decode of every frame would have returned: those between
        the first and the last frame kept. Counted from the result, not while feeding
        packets, so that where a decode stops (one codec thread meets an error a packet
        earlier than two) does not change the count."""
        if first_ms is None:
            return 0
        return sum(1 for index in left_out if first_ms <= self.times_ms[index] <= last_ms)

    def within(self, first_packet: int, end_packet: int) -> dict[int, int]:
        """The packets of [first_packet, end_packet) to leave out, as offsets from
        `first_packet`, each with the pts the scan read for it."""
        return {
            index - first_packet: pts
            for index, pts in self.pts.items()
            if first_packet <= index < end_packet
        }


def scan_packets(container: InputContainer, stream: VideoStream) -> PacketScan:
    """Every packet of `stream` (the container's demuxer is used up). Raises ScanFailed."""
    scan = PacketScan([], [], [], [], [])
    length_size = None
    if stream.codec_context.name == "h264":
        length_size = avcc_length_size(stream.codec_context.extradata)
    try:
        for packet in container.demux(stream):
            if packet.size == 0 and packet.pts is None:
                continue  # the end-of-stream flush packet
            if packet.pts is None:
                raise ScanFailed("a packet has no presentation time")
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
            scan.discarded.append(bool(packet.is_discard))
    except (av.error.FFmpegError, ValueError, OSError, EOFError) as error:
        raise ScanFailed(f"the demuxer failed: {str(error)[:200]}") from None
    return scan


def packet_times_ms(pts: list[int], time_base: Fraction, offset_ms: float) -> list[float]:
    """The times the decoded frames will have, bit for bit: PyAV's `Frame.time` is
    float(pts) * num / den (the stream's time base, already reduced by FFmpeg), and the tick
    writer adds the offset in milliseconds."""
    num, den = time_base.numerator, time_base.denominator
    return [float(value) * num / den * 1000.0 + offset_ms for value in pts]


def skippable_packets(scan: PacketScan, time_base: Fraction, offset_ms: float) -> SkipPlan:
    """The packets not to decode: disposable pictures that no tick shows (discarded packets
    are neither skipped nor anyone's successor)."""
    if not any(scan.disposable):
        return SkipPlan()
    shown = [index for index, discarded in enumerate(scan.discarded) if not discarded]
    times = packet_times_ms([scan.pts[index] for index in shown], time_base, offset_ms)
    invisible = invisible_frames(times, [scan.disposable[index] for index in shown])
    chosen = sorted(invisible)
    return SkipPlan(
        {shown[position]: scan.pts[shown[position]] for position in chosen},
        {shown[position]: times[position] for position in chosen},
    )
