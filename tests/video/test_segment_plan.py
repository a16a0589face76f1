"""Where a video is cut into segments that decode in parallel: a pure function (no av)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rovertrain.video.segments import MAX_LEADING_PACKETS, Segment, plan_segments, usable_cuts


def ordered(count: int) -> list[int]:
    return [index * 512 for index in range(count)]


def test_one_segment_without_threads_keyframes_or_packets() -> None:
    pts, sizes = ordered(300), [100] * 300
    whole = [Segment(0, 300, None, None)]
    assert plan_segments(pts, sizes, list(range(0, 300, 30)), count=1) == whole
    assert plan_segments(pts, sizes, [0], count=4) == whole  # one keyframe: nowhere to cut
    short = plan_segments(ordered(40), [100] * 40, [0, 20], count=2, min_packets=30)
    assert short == [Segment(0, 40, None, None)]


def test_cuts_share_the_packets_evenly_at_keyframes() -> None:
    pts, sizes, keyframes = ordered(300), [100] * 300, list(range(0, 300, 30))
    assert plan_segments(pts, sizes, keyframes, count=2) == [
        Segment(0, 150, None, 150 * 512),
        Segment(150, 300, 150 * 512, None),
    ]
    three = plan_segments(pts, sizes, keyframes, count=3)
    assert [segment.first_packet for segment in three] == [0, 90, 210]  # nearest 100, 200
    assert len(plan_segments(pts, sizes, keyframes, count=64)) == 300 // 30


def test_big_packets_weigh_more_than_small_ones() -> None:
    # The first half of the video has packets ten times larger: the cut moves into it.
    # Cost per packet: its size plus the mean size (550), half of the total at packet 106.
    sizes = [1000] * 150 + [100] * 150
    plan = plan_segments(ordered(300), sizes, list(range(0, 300, 30)), count=2)
    assert plan[1].first_packet == 120


def test_a_keyframe_that_an_earlier_packet_shows_after_is_no_cut() -> None:
    # The P-frame at index 1 is decoded before the keyframe at index 4 but shows after it:
    # a segment starting at that keyframe would have to keep a frame it never decodes.
    pts = [0, 5, 1, 2, 4, 6, 7, 8]
    assert usable_cuts(pts, [0, 4, 5]) == [5]
    assert usable_cuts([0, 3, 1, 2, 4, 7, 5, 6, 8, 9], [0, 4, 8]) == [4, 8]


def test_leading_pictures_of_an_open_gop_belong_to_the_segment_before() -> None:
    # ... P(29) | I(32) B(30) B(31) P(35) ...: the two B-frames after the keyframe show
    # before it; the first segment decodes them (it has their references), the second
    # decodes from the keyframe on and keeps frames from its time on.
    pts = [*range(30), 32, 30, 31, *range(33, 70)]
    plan = plan_segments(pts, [10] * len(pts), [0, 30], count=2, min_packets=10)
    assert plan == [Segment(0, 33, None, 32), Segment(30, len(pts), 32, None)]


def test_a_keyframe_with_too_many_leading_packets_is_no_cut() -> None:
    lead = MAX_LEADING_PACKETS + 1
    pts = [*range(30), 30 + lead, *range(30, 30 + lead), *range(31 + lead, 80)]
    assert usable_cuts(pts, [0, 30]) == []


@st.composite
def videos(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """Decode-order timestamps with B-frame-like local reordering, random keyframes."""
    count = draw(st.integers(2, 400))
    pts = list(range(count))
    position = 0
    while position < count:
        width = draw(st.integers(1, 4))
        block = pts[position : position + width]
        pts[position : position + width] = [block[-1], *block[:-1]]  # the reference first
        position += width
    keyframes = sorted(draw(st.sets(st.integers(0, count - 1), max_size=30)) | {0})
    sizes = draw(st.lists(st.integers(1, 10_000), min_size=count, max_size=count))
    return pts, sizes, keyframes


@given(videos(), st.integers(1, 16), st.integers(1, 50))
def test_every_frame_is_kept_by_exactly_one_segment_that_decodes_its_packet(
    video: tuple[list[int], list[int], list[int]], threads: int, min_packets: int
) -> None:
    pts, sizes, keyframes = video
    plan = plan_segments(pts, sizes, keyframes, threads, min_packets)
    assert 1 <= len(plan) <= threads
    assert plan[0].first_packet == 0 and plan[0].start_pts is None
    assert plan[-1].end_packet == len(pts) and plan[-1].end_pts is None
    for before, after in itertools.pairwise(plan):
        assert after.first_packet in keyframes
        assert before.end_pts == after.start_pts == pts[after.first_packet]
        assert before.end_packet >= after.first_packet
        assert after.first_packet - before.first_packet >= min_packets
    for index, time in enumerate(pts):
        owners = [
            segment
            for segment in plan
            if (segment.start_pts is None or time >= segment.start_pts)
            and (segment.end_pts is None or time < segment.end_pts)
        ]
        assert len(owners) == 1
        assert owners[0].first_packet <= index < owners[0].end_packet
