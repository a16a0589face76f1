"""Cutting one episode's stretch out of a shared video without re-encoding it.

LeRobot v3 packs many episodes into one MP4; an episode is the span [from, to) seconds of it.
The packets are copied from the keyframe at or before `from` (a decoder must start at a
keyframe) up to the last packet shown before `to`, into Matroska, their times moved so the
first starts near 0. The few frames between that keyframe and `from` belong to the previous
episode: they come before the recording's first command. With B-frames, a frame or two
after `to` (references of frames before it) come along too, after the last command. And `offsetMs` (negative, within one
keyframe interval) puts every frame back at its time on the episode's clock.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.errors import SkipSession
from rovertrain.data.recording import MAX_OFFSET_MS, open_regular
from rovertrain.video.containers import describe_head, sniff_container

if TYPE_CHECKING:
    from av.packet import Packet
    from av.video.stream import VideoStream


@dataclass(frozen=True)
class Segment:
    frames: int
    """Frames shown within [from, to)."""
    leading: int
    """Frames before `from` kept because the segment must start at a keyframe."""
    trailing: int
    """Frames at or after `to` kept because a frame shown before `to` is decoded from them."""
    offset_ms: float
    codec: str

    def event_fields(self) -> dict[str, object]:
        """The `imported` event's `video`: what the cut kept."""
        return {
            "codec": self.codec,
            "remuxed": True,
            "leadingFrames": self.leading,
            "trailingFrames": self.trailing,
        }


def span_to_copy(packets: list[tuple[int, int, bool]], end: float) -> tuple[int, int]:
    """Which of `packets` ((pts, dts, keyframe) in decode order, from the seek point) to copy
    so that every frame shown before `end` decodes: [first keyframe, last packet whose pts is
    before `end`]. Later packets in decode order are never references of earlier ones, so
    cutting after that packet loses nothing shown. Pure; `(n, n)` when nothing qualifies."""
    first = next((number for number, item in enumerate(packets) if item[2]), len(packets))
    last = first - 1
    for number in range(first, len(packets)):
        pts, dts, _ = packets[number]
        if dts >= end:  # pts >= dts: nothing after this is shown before `end`
            break
        if pts < end:
            last = number
    return (first, last + 1) if last >= first else (len(packets), len(packets))


def cut_segment(
    source: Path, target: Path, start_s: float, end_s: float, max_bytes: int
) -> Segment:
    """Copy the packets of [start_s, end_s) of `source`'s first video stream into `target`
    (Matroska). SkipSession when the file is not an allowed container or has no such span."""
    import av

    with open_regular(source, max_bytes) as stream:
        head = stream.read(512)
    container_name = sniff_container(head)
    if container_name is None:
        raise SkipSession("invalid_recording", f"{source.name}: {describe_head(head)}")
    try:
        inp = av.open(str(source), format=container_name, options={"protocol_whitelist": "file"})
    except (av.error.FFmpegError, OSError, ValueError) as error:
        raise SkipSession("decode_error", f"FFmpeg cannot open {source.name}: {error}") from None
    with inp:
        videos = inp.streams.video
        if not videos:
            raise SkipSession("no_video", f"{source.name} has no video stream")
        video = videos[0]
        base = video.time_base
        if base is None:
            raise SkipSession("decode_error", f"{source.name}: the video stream has no time base")
        start, end = start_s / base, end_s / base
        read: list[Packet[VideoStream]] = []
        times: list[tuple[int, int, bool]] = []  # (pts, dts, keyframe) of each packet read
        try:
            inp.seek(max(0, int(start)), stream=video, backward=True, any_frame=False)
            for packet in inp.demux(video):
                if packet.pts is None:
                    continue
                dts = packet.dts if packet.dts is not None else packet.pts
                read.append(packet)
                times.append((packet.pts, dts, packet.is_keyframe))
                if dts >= end:
                    break
        except av.error.FFmpegError as error:
            raise SkipSession("decode_error", f"{source.name}: {error}") from None
        first, last = span_to_copy(times, end)
        kept, kept_times = read[first:last], times[first:last]
        shown = sum(1 for pts, _, _ in kept_times if start - 1e-9 <= pts < end)
        if not shown:
            raise SkipSession(
                "no_windows", f"{source.name} shows no frame in [{start_s:.3f}, {end_s:.3f}) s"
            )
        shift = min(min(pts for pts, _, _ in kept_times), min(dts for _, dts, _ in kept_times))
        leading = sum(1 for pts, _, _ in kept_times if pts < start - 1e-9)
        trailing = sum(1 for pts, _, _ in kept_times if pts >= end)
        try:
            with av.open(str(target), mode="w", format="matroska") as out:
                copy = out.add_stream_from_template(video)
                for packet, (pts, _, _) in zip(kept, kept_times, strict=True):
                    packet.pts = pts - shift
                    if packet.dts is not None:
                        packet.dts -= shift
                    packet.stream = copy
                    out.mux(packet)
        except av.error.FFmpegError as error:
            if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise SkipSession("decode_error", f"{source.name}: cannot copy: {error}") from None
        offset_ms = float(shift * base - start_s) * 1000.0
        if abs(offset_ms) > MAX_OFFSET_MS:
            raise SkipSession(
                "invalid_recording",
                f"{source.name}: the keyframe before the episode is {-offset_ms / 1000:.0f} s "
                "early, beyond the format's offsetMs limit (re-encode with shorter GOPs)",
            )
        return Segment(shown, leading, trailing, offset_ms, video.codec_context.name)
