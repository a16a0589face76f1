"""Which rank decodes which session, and which part of each batch a rank trains on. Pure."""

from __future__ import annotations

from collections.abc import Sequence


def shard_sessions(sizes: Sequence[tuple[str, int]], ranks: int) -> list[list[str]]:
    """Size-balanced shards: largest video first, each to the rank with the fewest bytes so far.

    Deterministic (ties go to the earlier session and the lower rank) and complete: every
    session lands on exactly one rank; each shard keeps the given (processing) order.
    """
    position = {session_id: index for index, (session_id, _size) in enumerate(sizes)}
    loads = [0] * ranks
    owner: dict[str, int] = {}
    for session_id, size in sorted(sizes, key=lambda item: (-item[1], position[item[0]])):
        rank = min(range(ranks), key=lambda r: (loads[r], r))
        owner[session_id] = rank
        loads[rank] += max(0, size)
    shards: list[list[str]] = [[] for _ in range(ranks)]
    for session_id, _size in sizes:
        shards[owner[session_id]].append(session_id)
    return shards


def batch_share(count: int, rank: int, ranks: int) -> slice:
    """Rank `rank`'s contiguous part of a global batch of `count` examples.

    Parts differ by at most one example. A batch smaller than the world (the last of a pass)
    gives the surplus ranks a copy of its last example, so that every rank steps.
    """
    if count < ranks:
        index = min(rank, count - 1)
        return slice(index, index + 1)
    return slice(rank * count // ranks, (rank + 1) * count // ranks)
