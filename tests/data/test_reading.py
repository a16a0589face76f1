"""Which sessions a job reads (data/reading.py) and which frames the budget drops (data/window_store/upkeep.py):
pure decisions, no files."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.data.reading import Older, choose_held_out, choose_older, plan_reading
from rovertrain.data.window_store.manifest import ManifestRow
from rovertrain.data.window_store.upkeep import frames_to_drop


def olders(count: int, rover: str = "r1", usable: int = 100, stops: bool = True) -> list[Older]:
    return [Older(f"{rover}-old-{n:04d}", rover, usable, stops) for n in range(count)]


def test_a_root_within_the_limits_is_read_whole() -> None:
    plan = plan_reading(["n1"], olders(10), ["h1"], ["h2", "h3"], (11, 3), seed=0, generation=5)
    assert plan.sampled == {"n1", "h1", "h2", "h3", *(o.session_id for o in olders(10))}
    assert plan.ingested == {"n1", "h1"}


def test_every_new_session_is_read_and_the_older_ones_are_bounded() -> None:
    new = [f"new-{n}" for n in range(3)]
    plan = plan_reading(new, olders(500), [], [], (16, 4), seed=1, generation=7)
    assert set(new) <= plan.sampled
    assert len(plan.sampled) == 16  # 3 new, 13 older
    many_new = [f"new-{n}" for n in range(40)]
    plan = plan_reading(many_new, olders(500), [], [], (16, 4), seed=1, generation=7)
    assert set(many_new) <= plan.sampled
    assert len(plan.sampled - set(many_new)) == 8  # half of sessionsPerJob stays for the past


def test_the_choice_is_seeded_and_moves_with_the_generation() -> None:
    candidates = olders(300)
    first = plan_reading([], candidates, [], [], (10, 4), seed=3, generation=1)
    again = plan_reading([], candidates, [], [], (10, 4), seed=3, generation=1)
    later = plan_reading([], candidates, [], [], (10, 4), seed=3, generation=2)
    assert first == again
    assert first.sampled != later.sampled


def test_strata_keep_their_share_of_the_past() -> None:
    """Two rovers, one with 3× the footage: each gets its share; a small stratum is not lost."""
    candidates = [*olders(200, "big", usable=300), *olders(200, "small", usable=100)]
    candidates += olders(5, "rare", usable=100, stops=False)
    chosen = choose_older(candidates, 40, random.Random(0))
    rovers = Counter(session.split("-old-")[0] for session in chosen)
    assert len(chosen) == len(set(chosen)) == 40
    assert rovers["big"] == 29 and rovers["small"] == 10 and rovers["rare"] == 1


def test_longer_sessions_are_likelier_to_be_read() -> None:
    candidates = [Older(f"s{n}", "r", 1000 if n % 2 else 10, True) for n in range(400)]
    counts: Counter[bool] = Counter()
    for trial in range(20):
        for session in choose_older(candidates, 40, random.Random(trial)):
            counts[int(session[1:]) % 2 == 1] += 1
    assert counts[True] > 5 * counts[False]


def test_the_held_out_sample_drifts_slowly_as_the_root_grows() -> None:
    sessions = [f"h{n}" for n in range(100)]
    before = set(choose_held_out(sessions, 16, seed=0))
    after = set(choose_held_out([*sessions, "h-new-1", "h-new-2"], 16, seed=0))
    assert len(before) == len(after) == 16
    assert len(before - after) <= 2  # only the newcomers can displace anyone


@settings(max_examples=60, deadline=None)
@given(
    new=st.integers(0, 30),
    old=st.integers(0, 200),
    held_new=st.integers(0, 5),
    held_old=st.integers(0, 40),
    per_job=st.integers(1, 40),
    held_limit=st.integers(1, 20),
    seed=st.integers(0, 5),
)
def test_reading_plan_bounds(
    new: int, old: int, held_new: int, held_old: int, per_job: int, held_limit: int, seed: int
) -> None:
    training_new = [f"n{n}" for n in range(new)]
    held = [f"hn{n}" for n in range(held_new)], [f"ho{n}" for n in range(held_old)]
    plan = plan_reading(training_new, olders(old), *held, (per_job, held_limit), seed, 0)
    training = {s for s in plan.sampled if not s.startswith("h")}
    assert set(training_new) <= training
    assert len(training) <= max(per_job, new + per_job // 2)
    assert len(plan.sampled - training) == min(held_limit, held_new + held_old)
    assert plan.ingested == {*training_new, *held[0]}


def row(session: str, generation: int, size: int, dropped: bool = False) -> ManifestRow:
    return ManifestRow(
        session_id=session, entry=f"{session}-e", fingerprint="f", video="v.mp4",
        commands="c.jsonl", held_out=False, windows=10, usable_none=5, usable_command=4,
        usable_stop=1, rover_id="r", control_profile=None, driven_by=None,
        supervised_windows=0, autonomous_windows=0, take_overs=0, command_types="[]",
        command_roles="{}", generation=generation, entry_bytes=size, dropped=dropped,
    )  # fmt: skip


def test_the_budget_drops_the_oldest_frames_first_and_never_what_the_job_read() -> None:
    rows = [row("a", 3, 100), row("b", 1, 100), row("c", 2, 100), row("d", 1, 100, True)]
    assert frames_to_drop(rows, 300, 300, keep=set()) == []
    assert frames_to_drop(rows, 300, 150, keep=set()) == ["b", "c"]
    assert frames_to_drop(rows, 300, 150, keep={"b-e"}) == ["c", "a"]
    assert frames_to_drop(rows, 300, 0, keep={"a-e", "b-e", "c-e"}) == []
