"""From a bag's message times and values to parts and commands (pure)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rovertrain.importers.commands import CommandRules, ControlSample, extract_commands
from rovertrain.importers.rosbag_plan import (
    HEADER,
    MAX_SKEW_NS,
    RECEIVE,
    Stamped,
    TimedSample,
    message_time,
    mux,
    part_samples,
    split_parts,
    topic_clock,
    write_order,
)

MS = 1_000_000


def test_a_topic_is_timed_by_its_stamps_when_they_are_on_the_recorders_clock() -> None:
    near = [Stamped(1_000 * MS + n * 33 * MS, 990 * MS + n * 33 * MS) for n in range(30)]
    assert topic_clock(near) == HEADER
    # a simulator's clock (seconds since it started) against wall-clock receive times
    sim = [Stamped(1_764_500_000_000 * MS + n * MS, (n + 1) * MS) for n in range(30)]
    assert topic_clock(sim) == RECEIVE
    skewed = [Stamped(s.receive_ns, s.receive_ns - MAX_SKEW_NS - 1) for s in near]
    assert topic_clock(skewed) == RECEIVE
    # no header (Twist) or stamps left at zero by the publisher
    assert topic_clock([Stamped(n * MS) for n in range(30)]) == RECEIVE
    assert topic_clock([]) == RECEIVE


def test_a_few_missing_stamps_fall_back_to_receive_time_one_by_one() -> None:
    messages = [Stamped(1_000 * MS + n * MS, 999 * MS + n * MS) for n in range(200)]
    messages[7] = Stamped(messages[7].receive_ns, 0)
    assert topic_clock(messages) == HEADER
    assert message_time(messages[7], HEADER) == messages[7].receive_ns
    assert message_time(messages[8], HEADER) == messages[8].stamp_ns
    messages[9] = Stamped(messages[9].receive_ns, 0)
    messages[10] = Stamped(messages[10].receive_ns, 0)
    assert topic_clock(messages) == RECEIVE  # more than 1% unstamped


def test_frames_that_arrive_out_of_order_are_written_in_order() -> None:
    times = [0, 33, 100, 66, 133, 166]
    result = write_order(times, depth=4)
    assert [times[index] for index in result.order] == [0, 33, 66, 100, 133, 166]
    assert result.dropped.as_dict() == {}


def test_a_frame_later_than_the_buffer_or_at_a_written_time_is_dropped() -> None:
    times = [100, 200, 300, 400, 50, 400]
    result = write_order(times, depth=2)
    assert [times[index] for index in result.order] == [100, 200, 300, 400]
    assert result.dropped.as_dict() == {"duplicate_time": 1, "late_frame": 1}


@given(st.lists(st.integers(0, 10_000), max_size=80), st.integers(1, 40))
def test_write_order_is_increasing_and_accounts_for_every_frame(
    times: list[int], depth: int
) -> None:
    result = write_order(times, depth)
    written = [times[index] for index in result.order]
    assert all(a < b for a, b in itertools.pairwise(written))
    assert len(result.order) + sum(result.dropped.counts.values()) == len(times)
    assert len(set(result.order)) == len(result.order)


def test_the_camera_is_split_where_it_pauses() -> None:
    times = [0, 10, 20, 200, 210, 500]
    assert split_parts(times, 100) == [(0, 3), (3, 5), (5, 6)]
    assert split_parts(times, 1_000) == [(0, 6)]
    assert split_parts([], 100) == []


def sample(ms: int, by: str = "human", speed: float = 0.5) -> TimedSample:
    return TimedSample(ms * MS, {"speed": speed}, by)


def test_the_mux_lets_a_lower_priority_through_only_after_the_higher_falls_silent() -> None:
    person = [sample(1_000), sample(1_100), sample(1_200)]
    policy = [sample(t, "policy") for t in range(0, 3_000, 100)]
    kept = mux([person, policy], 500 * MS)
    by_time = [(s.time_ns // MS, s.by) for s in kept]
    assert (900, "policy") in by_time and (1_000, "human") in by_time
    # blocked from the person's first message until 500 ms after their last
    assert not [t for t, by in by_time if by == "policy" and 1_000 <= t <= 1_700]
    assert (1_800, "policy") in by_time
    assert [t for t, _ in by_time] == sorted(t for t, _ in by_time)


def test_a_parts_samples_are_on_its_own_clock() -> None:
    samples = [sample(t) for t in (0, 50, 100, 150, 200)]
    chosen = part_samples(samples, 50 * MS, 150 * MS)
    assert [s.t for s in chosen] == [0.0, 50.0, 100.0]


def test_a_person_taking_over_sends_at_once_and_is_marked() -> None:
    rules = CommandRules(tolerance=0.05, keepalive_ms=500, silence_ms=500)
    samples = [ControlSample(t, {"speed": 0.5}, "policy") for t in (0, 100, 200)]
    samples += [ControlSample(t, {"speed": 0.5}, "human") for t in (300, 400)]
    commands = extract_commands(samples, rules)
    assert [(c.t, c.type, c.by) for c in commands] == [
        (0, "drive", "policy"),
        (300, "drive", "human"),
    ]


def test_a_stream_that_falls_silent_while_moving_is_a_stop() -> None:
    rules = CommandRules(tolerance=0.05, keepalive_ms=500, silence_ms=500)
    samples = [ControlSample(t, {"speed": 0.5}) for t in (0, 100)]
    samples += [ControlSample(t, {"speed": 0.5}) for t in (2_000, 2_100)]
    commands = extract_commands(samples, rules, end=5_000)
    assert [(c.t, c.type) for c in commands] == [
        (0, "drive"),
        (600, "stop"),
        (2_000, "drive"),
        (2_600, "stop"),
    ]
    # without silence_ms (tubs, data sets) a pause is just a pause
    quiet = extract_commands(samples, CommandRules(tolerance=0.05, keepalive_ms=500), end=5_000)
    assert [(c.t, c.type) for c in quiet] == [(0, "drive"), (2_000, "drive")]


def test_zeros_that_keep_coming_hold_the_stop() -> None:
    rules = CommandRules(tolerance=0.05, keepalive_ms=500, stop_keepalive=True)
    moving = [ControlSample(t, {"speed": 0.5}) for t in (0, 100)]
    zeros = [ControlSample(t, {"speed": 0.0}) for t in range(200, 1_400, 100)]
    commands = extract_commands(moving + zeros, rules)
    assert [(c.t, c.type) for c in commands] == [
        (0, "drive"),
        (200, "stop"),
        (700, "stop"),
        (1_200, "stop"),
    ]
    # zeros before the rover ever moved are nobody stopping it
    assert extract_commands(zeros, rules) == []
    once = CommandRules(tolerance=0.05, keepalive_ms=500, stop_keepalive=False)
    assert [c.type for c in extract_commands(moving + zeros, once)] == ["drive", "stop"]
