"""Window sampling: reservoirs per category (training) or one natural reservoir (held out).

Pure: indices in, indices out; the caller gathers the windows.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable, Sequence

CATEGORY_COUNT = 3


def per_session_capacity(max_samples: int, sessions: int) -> int:
    return max(1, max_samples // max(1, sessions))


def category_capacity(per_session: int) -> int:
    return max(1, per_session // 3)


def session_rng(seed: int, session_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{session_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def reservoir(items: Iterable[int], capacity: int, rng: random.Random) -> list[int]:
    """Algorithm R: a uniform sample of `capacity` items from a stream of unknown length."""
    kept: list[int] = []
    for seen, item in enumerate(items, start=1):
        if len(kept) < capacity:
            kept.append(item)
        else:
            slot = rng.randrange(seen)
            if slot < capacity:
                kept[slot] = item
    return kept


def sample_windows(
    usable: Sequence[int],
    categories: Sequence[int],
    held_out: bool,
    per_session: int,
    rng: random.Random,
) -> list[int]:
    """Indices of the windows to keep, in time order.

    `usable` lists window indices in time order; `categories[i]` is window i's category
    (0 none, 1 command, 2 stop). Training keeps up to category_capacity windows of each
    category so idle stretches cannot crowd out the commands; held-out keeps the natural mix.
    """
    if held_out:
        return sorted(reservoir(usable, per_session, rng))
    capacity = category_capacity(per_session)
    buckets: list[list[int]] = [[] for _ in range(CATEGORY_COUNT)]
    for index in usable:
        buckets[categories[index]].append(index)
    kept: list[int] = []
    for bucket in buckets:
        kept.extend(reservoir(bucket, capacity, rng))
    return sorted(kept)


SELECTION_GAP_WINDOWS = 20
"""Windows (2 s) left out between a training session's head and its selection tail, so the
two do not share a moment of driving."""
MIN_SELECTION_WINDOWS = 10


def selection_capacity(per_session: int, fraction: float) -> int:
    return math.ceil(per_session * fraction)


def split_tail(usable: Sequence[int], fraction: float) -> tuple[list[int], list[int]]:
    """(head, tail) of a training session's usable windows (in time order).

    The tail, the last `fraction` of the windows, selects the weights to publish and says when
    training stops improving: it is never trained on, and it is not the gate's held-out
    sessions, so the gate stays unbiased. A session too short for a tail of
    MIN_SELECTION_WINDOWS is all head.
    """
    tail_size = math.floor(len(usable) * fraction)
    if tail_size < MIN_SELECTION_WINDOWS:
        return list(usable), []
    cut = len(usable) - tail_size
    return list(usable[: max(0, cut - SELECTION_GAP_WINDOWS)]), list(usable[cut:])


def with_corrections_repeated(
    indices: Sequence[int], corrections: Sequence[bool], repeats: int, room: int
) -> list[int]:
    """`indices` with each correction window (`corrections[i]`) taken `repeats` times in all,
    as many extra copies as `room` allows, in time order (a weight by repetition)."""
    extra = [index for index in indices if corrections[index]] * (repeats - 1)
    return sorted([*indices, *extra[: max(0, room)]])
