"""From a bag's messages (their times and values) to the recordings it becomes. Pure.

A bag's messages carry two times: when the recorder received them and, for stamped messages,
the header stamp the publisher set (a camera's capture time). `topic_clock` decides which one
a topic is timed by; `write_order` puts frames that arrived out of order back in order;
`split_parts` cuts the camera where it pauses; `mux` keeps what a `twist_mux` would have let
through; `part_samples` gives one recording's controls on its own clock.
"""

from __future__ import annotations

import bisect
import heapq
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from rovertrain.importers.commands import ControlSample, Dropped

NS_PER_MS = 1_000_000
MAX_SKEW_NS = 5_000_000_000
"""Header stamps further than this from the receive times (median) are on another clock (a
simulator's, an unsynchronised camera's): the topic is timed by receive time instead."""
USABLE_STAMPS = 0.99
"""The share of messages that must carry a stamp (not zero) for a topic to be timed by them."""
REORDER_DEPTH = 32
"""Frames held back to put late arrivals in order (one second at 30 fps); later ones drop."""
MIN_PART_FRAMES = 10
HEADER, RECEIVE = "header", "receive"


@dataclass(frozen=True)
class Stamped:
    """One message's times (ns): received by the recorder, and its header stamp (0: none)."""

    receive_ns: int
    stamp_ns: int = 0


def topic_clock(messages: Sequence[Stamped]) -> str:
    """HEADER when nearly every message has a stamp and the stamps are on the recorder's
    clock (within MAX_SKEW_NS of when they were received, median), else RECEIVE."""
    stamped = [message for message in messages if message.stamp_ns > 0]
    if not messages or len(stamped) < USABLE_STAMPS * len(messages):
        return RECEIVE
    skew = statistics.median(abs(m.receive_ns - m.stamp_ns) for m in stamped)
    return HEADER if skew <= MAX_SKEW_NS else RECEIVE


def message_time(message: Stamped, clock: str) -> int:
    """A message's time (ns) on the topic's clock; a stamp-less one under HEADER falls back to
    its receive time."""
    return message.stamp_ns if clock == HEADER and message.stamp_ns > 0 else message.receive_ns


@dataclass
class FrameOrder:
    order: list[int]
    """Indexes (in arrival order) of the frames to write, in the order to write them."""
    dropped: Dropped = field(default_factory=Dropped)


def write_order(times: Sequence[int], depth: int = REORDER_DEPTH) -> FrameOrder:
    """Frames (arrival order, each its time) in increasing time: up to `depth` are held back
    so a late one takes its place; one later than that (`late_frame`) or at the time of a
    frame already written (`duplicate_time`) is dropped. Writing with the same buffer in
    arrival order reproduces it."""
    result = FrameOrder([])
    held: list[tuple[int, int]] = []
    last: int | None = None

    def release() -> None:
        nonlocal last
        time, index = heapq.heappop(held)
        if last is not None and time <= last:
            result.dropped.add("duplicate_time" if time == last else "late_frame")
            return
        result.order.append(index)
        last = time

    for index, time in enumerate(times):
        heapq.heappush(held, (time, index))
        if len(held) > depth:
            release()
    while held:
        release()
    return result


def split_parts(times: Sequence[int], gap_ns: int) -> list[tuple[int, int]]:
    """[start, end) slices of `times` (increasing) between pauses longer than `gap_ns`."""
    parts: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(times)):
        if times[index] - times[index - 1] > gap_ns:
            parts.append((start, index))
            start = index
    if times:
        parts.append((start, len(times)))
    return parts


@dataclass(frozen=True)
class TimedSample:
    time_ns: int
    values: dict[str, float]
    by: str


def mux(streams: Sequence[Sequence[TimedSample]], timeout_ns: int) -> list[TimedSample]:
    """The samples a `twist_mux` passes on, by time: `streams` in priority order (first
    highest), each sorted; a sample is dropped while a higher-priority stream sent one
    within `timeout_ns` before it (or at the same time)."""
    times = [[sample.time_ns for sample in stream] for stream in streams]
    kept: list[TimedSample] = []
    for priority, stream in enumerate(streams):
        for sample in stream:
            blocked = False
            for higher in times[:priority]:
                at = bisect.bisect_right(higher, sample.time_ns)
                if at and sample.time_ns - higher[at - 1] <= timeout_ns:
                    blocked = True
                    break
            if not blocked:
                kept.append(sample)
    kept.sort(key=lambda sample: (sample.time_ns, sample.by))
    return kept


def part_samples(samples: Sequence[TimedSample], start_ns: int, end_ns: int) -> list[ControlSample]:
    """The controls in [start_ns, end_ns] (sorted samples) in ms since `start_ns`."""
    first = bisect.bisect_left(samples, start_ns, key=lambda sample: sample.time_ns)
    last = bisect.bisect_right(samples, end_ns, key=lambda sample: sample.time_ns)
    return [
        ControlSample((sample.time_ns - start_ns) / NS_PER_MS, sample.values, sample.by)
        for sample in samples[first:last]
    ]
