from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.data.partition import is_held_out, processing_order
from rovertrain.data.sampling import (
    SELECTION_GAP_WINDOWS,
    category_capacity,
    per_session_capacity,
    reservoir,
    sample_windows,
    split_tail,
)


def test_partition_rule_on_known_ids() -> None:
    import hashlib

    for session_id in ["a", "b", "drive-0-0004", "session-17", "rover-ash-2026"]:
        expected = int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16) % 5 == 0
        assert is_held_out(session_id) == expected
    assert is_held_out("drive-0-0004") and not is_held_out("drive-0-0000")


def test_order_puts_held_out_last_and_depends_only_on_seed() -> None:
    sessions = [f"s{i}" for i in range(40)]
    order = processing_order(sessions, 7)
    flags = [is_held_out(s) for s in order]
    assert flags == sorted(flags) and sorted(order) == sorted(sessions)
    assert processing_order(sessions, 7) == order
    assert processing_order(sessions, 8) != order


def test_capacities() -> None:
    assert per_session_capacity(1000, 3) == 333
    assert per_session_capacity(2, 5) == 1
    assert category_capacity(333) == 111 and category_capacity(2) == 1


def test_reservoir_is_uniform() -> None:
    rng = random.Random(1)
    counts: Counter[int] = Counter()
    for _ in range(4000):
        counts.update(reservoir(range(10), 3, rng))
    expected = 4000 * 3 / 10
    assert all(abs(counts[i] - expected) < expected * 0.1 for i in range(10))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=300), st.integers(1, 90), st.booleans())
def test_sampling_respects_capacities(categories, per_session, held_out) -> None:
    usable = list(range(len(categories)))
    chosen = sample_windows(usable, categories, held_out, per_session, random.Random(0))
    assert chosen == sorted(set(chosen))
    if held_out:
        assert len(chosen) == min(per_session, len(usable))
    else:
        by_category = Counter(categories[i] for i in chosen)
        for category in range(3):
            available = categories.count(category)
            assert by_category[category] == min(available, category_capacity(per_session))


def test_the_selection_tail_is_the_end_of_the_session_with_a_gap() -> None:
    usable = list(range(0, 400, 2))  # 200 usable windows, in time order
    head, tail = split_tail(usable, 0.15)
    assert tail == usable[-30:]
    assert head == usable[: 200 - 30 - SELECTION_GAP_WINDOWS]
    assert max(head) < min(tail)
    assert split_tail(usable, 0.0) == (usable, [])
    short = list(range(40))  # a tail of 6 windows is too small to measure anything
    assert split_tail(short, 0.15) == (short, [])


@given(
    st.lists(st.integers(0, 5000), unique=True, max_size=600).map(sorted),
    st.floats(0, 0.5),
)
@settings(max_examples=200, deadline=None)
def test_head_and_tail_never_share_a_window(usable: list[int], fraction: float) -> None:
    head, tail = split_tail(usable, fraction)
    assert not set(head) & set(tail)
    assert set(head) | set(tail) <= set(usable)
    assert len(tail) <= len(usable) * fraction + 1e-9
    if tail:
        assert len(usable) - len(head) - len(tail) == min(
            SELECTION_GAP_WINDOWS, len(usable) - len(tail)
        )
