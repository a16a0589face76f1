"""Which rank decodes which session and trains on which part of a batch (pure)."""

from __future__ import annotations

import random

import pytest

from rovertrain.distributed.rank_place import ONE_PROCESS, RankPlace, rank_place_from_env
from rovertrain.distributed.shard import batch_share, shard_sessions


def sizes(count: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"drive-{i:04d}", rng.randrange(1, 10**9)) for i in range(count)]


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
def test_shards_are_complete_disjoint_deterministic_and_keep_the_order(ranks: int) -> None:
    sessions = sizes(41, seed=ranks)
    shards = shard_sessions(sessions, ranks)
    assert shards == shard_sessions(list(sessions), ranks)
    assert len(shards) == ranks
    flat = [s for shard in shards for s in shard]
    assert sorted(flat) == sorted(s for s, _ in sessions) and len(set(flat)) == len(flat)
    order = [s for s, _ in sessions]
    for shard in shards:
        assert shard == sorted(shard, key=order.index)


def test_shards_balance_bytes_within_the_largest_video() -> None:
    sessions = sizes(60, seed=7)
    shards = shard_sessions(sessions, 4)
    size = dict(sessions)
    loads = [sum(size[s] for s in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(size.values())


def test_more_ranks_than_sessions_leaves_some_idle_and_ties_go_to_lower_ranks() -> None:
    assert shard_sessions([("a", 5), ("b", 5)], 3) == [["a"], ["b"], []]
    assert shard_sessions([], 2) == [[], []]


@pytest.mark.parametrize(("count", "ranks"), [(16, 2), (17, 2), (5, 3), (64, 8), (2, 2)])
def test_batch_shares_cover_the_batch_once(count: int, ranks: int) -> None:
    parts = [batch_share(count, rank, ranks) for rank in range(ranks)]
    covered = [i for part in parts for i in range(count)[part]]
    assert covered == list(range(count))
    lengths = [len(range(count)[part]) for part in parts]
    assert max(lengths) - min(lengths) <= 1


def test_a_batch_smaller_than_the_world_still_gives_every_rank_an_example() -> None:
    parts = [batch_share(2, rank, 4) for rank in range(4)]
    assert [range(2)[part] for part in parts] == [range(0, 1)] + [range(1, 2)] * 3


def test_world_from_the_launchers_environment() -> None:
    assert rank_place_from_env({}) == ONE_PROCESS
    assert rank_place_from_env({"WORLD_SIZE": "1", "RANK": "0"}) == ONE_PROCESS
    place = rank_place_from_env({"WORLD_SIZE": "4", "RANK": "2", "LOCAL_RANK": "0"})
    assert place == RankPlace(rank=2, size=4, local_rank=0)
    assert place.distributed and not place.leads
    assert rank_place_from_env({"WORLD_SIZE": "2", "RANK": "x"}) == ONE_PROCESS
    assert rank_place_from_env({"WORLD_SIZE": "2", "RANK": "2"}) == ONE_PROCESS
