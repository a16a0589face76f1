"""Which frames no 100 ms tick shows (pure).

The tick writer shows a frame at every tick T with time(frame) <= T < time(next frame), the
next frame being the one after it in presentation order. A frame whose successor comes
before the next tick is therefore never shown, and need not be decoded when nothing else
depends on it (`h264_nal.is_disposable`).

The times given are the ones the decoded frames will have, computed the same way to the bit
(`packet_scan.packet_times_ms`), so a successor exactly on a tick is recognised as that
tick's frame. A frame within MARGIN_MS after a tick counts as shown there, whatever rounding
put it there. Frames that share a time with another are always decoded (which of them the
writer keeps depends on the order the decoder returns them).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from rovertrain.contracts.observation import TICK_MS

MARGIN_MS = 0.001


def invisible_frames(times_ms: Sequence[float], candidates: Sequence[bool]) -> frozenset[int]:
    """Indices i with candidates[i] whose frame (at times_ms[i]) no tick shows."""
    if len(times_ms) != len(candidates):
        raise ValueError(f"{len(times_ms)} times for {len(candidates)} candidate flags")
    counts = Counter(times_ms)
    ordered = sorted(counts)
    invisible = []
    for index, (time, candidate) in enumerate(zip(times_ms, candidates, strict=True)):
        if not candidate or counts[time] > 1 or not math.isfinite(time):
            continue
        after = bisect.bisect_right(ordered, time)
        if after == len(ordered):
            continue  # the last frame shows at every tick up to its own
        successor = ordered[after]
        if successor - time <= MARGIN_MS:
            continue
        # Shown at the ticks in [time, successor): none when the first lies at or after it.
        if math.ceil((time - MARGIN_MS) / TICK_MS) * TICK_MS >= successor:
            invisible.append(index)
    return frozenset(invisible)
