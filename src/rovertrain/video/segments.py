"""Where to cut one video into keyframe-aligned segments that decode in parallel (pure).

A segment starts at a keyframe K and owns the frames whose presentation time lies in
[pts(K), pts(next cut)). It feeds the decoder from K up to the last packet (in decode order)
whose time lies before the next cut, so the leading pictures of an open GOP, which reference
frames before the next keyframe, are decoded by the segment that has those references.

A keyframe is a usable cut only when every packet before it in decode order shows earlier
(so no frame of an earlier segment needs a packet after the cut) and at most
`MAX_LEADING_PACKETS` packets after it show earlier (H.264 reorders by at most 16 frames).
Cuts are placed so that each segment gets about the same decoding cost, counted as the
packet bytes plus one mean packet size per packet (entropy decoding grows with the bytes,
reconstruction with the frames).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

MAX_LEADING_PACKETS = 16
MIN_SEGMENT_PACKETS = 30  # about a second at 30 fps: shorter segments do not pay for opening


@dataclass(frozen=True)
class Segment:
    """Packets [first_packet, end_packet) in decode order are decoded; frames with
    start_pts <= pts < end_pts are kept (None: unbounded)."""

    first_packet: int
    end_packet: int
    start_pts: int | None
    end_pts: int | None


def usable_cuts(pts: Sequence[int], keyframes: Sequence[int]) -> list[int]:
    """The keyframe indices (> 0, ascending) where a segment may start."""
    count = len(pts)
    suffix_min = _suffix_minimum(pts)
    cuts = []
    earlier_max: int | None = None
    keyframe_set = set(keyframes)
    for index in range(count):
        if index > 0 and index in keyframe_set:
            assert earlier_max is not None
            if earlier_max < pts[index] and _last_before(suffix_min, pts[index]) - index <= (
                MAX_LEADING_PACKETS
            ):
                cuts.append(index)
        earlier_max = pts[index] if earlier_max is None else max(earlier_max, pts[index])
    return cuts


def plan_segments(
    pts: Sequence[int],
    sizes: Sequence[int],
    keyframes: Sequence[int],
    count: int,
    min_packets: int = MIN_SEGMENT_PACKETS,
) -> list[Segment]:
    """At most `count` segments covering every packet; one segment when no cut is usable.

    `pts` and `sizes` are per packet in decode order; `keyframes` the indices of keyframes
    a decoder can start at."""
    if len(pts) != len(sizes):
        raise ValueError(f"{len(pts)} timestamps for {len(sizes)} packet sizes")
    total_packets = len(pts)
    whole = [Segment(0, total_packets, None, None)]
    if count < 2 or total_packets < 2 * min_packets:
        return whole
    mean_size = sum(sizes) / total_packets
    cost = [0.0]
    for size in sizes:
        cost.append(cost[-1] + size + mean_size)
    candidates = usable_cuts(pts, keyframes)
    cuts: list[int] = []
    previous = 0
    for part in range(1, count):
        target = cost[-1] * part / count
        options = [
            index
            for index in candidates
            if index - previous >= min_packets and total_packets - index >= min_packets
        ]
        if not options:
            break
        best = min(options, key=lambda index: abs(cost[index] - target))
        cuts.append(best)
        previous = best
    if not cuts:
        return whole
    suffix_min = _suffix_minimum(pts)
    segments = []
    starts = [0, *cuts]
    for position, first in enumerate(starts):
        start_pts = pts[first] if position > 0 else None
        if position + 1 < len(starts):
            end_pts: int | None = pts[starts[position + 1]]
            assert end_pts is not None
            end = max(starts[position + 1], _last_before(suffix_min, end_pts) + 1)
        else:
            end_pts, end = None, total_packets
        segments.append(Segment(first, end, start_pts, end_pts))
    return segments


def _suffix_minimum(pts: Sequence[int]) -> list[int]:
    """suffix[i] = min(pts[i:]), non-decreasing in i."""
    suffix = list(pts)
    for index in range(len(suffix) - 2, -1, -1):
        suffix[index] = min(suffix[index], suffix[index + 1])
    return suffix


def _last_before(suffix_min: list[int], time: int) -> int:
    """The last packet index whose pts is below `time` (-1 when none)."""
    return bisect.bisect_left(suffix_min, time) - 1
