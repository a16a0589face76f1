"""Which packets of a shared video an episode's segment copies (pure)."""

from __future__ import annotations

from rovertrain.importers.segment import span_to_copy


def test_from_the_keyframe_to_the_last_packet_shown_before_the_end() -> None:
    # (pts, dts, keyframe) in decode order, B-frames: I0 P3 B1 B2 P6 B4 B5 I9 ...
    packets = [(0, -2, True), (3, -1, False), (1, 0, False), (2, 1, False), (6, 2, False),
               (4, 3, False), (5, 4, False), (9, 5, True), (7, 6, False), (8, 7, False)]  # fmt: skip
    # Up to frame 5 (end 6): P6 is needed by B4 and B5, which come after it.
    assert span_to_copy(packets, 6) == (0, 7)
    # Up to frame 2 (end 3): I0 P3 B1 B2; P3 is shown at 3 but B1, B2 need it.
    assert span_to_copy(packets, 3) == (0, 4)
    # A seek that landed before a keyframe skips to it.
    assert span_to_copy(packets[1:], 6) == (9, 9)  # I9 is past the end: nothing
    assert span_to_copy([(5, 5, False), (6, 6, True), (7, 7, False)], 8) == (1, 3)


def test_nothing_to_copy() -> None:
    assert span_to_copy([], 5) == (0, 0)
    assert span_to_copy([(10, 10, True)], 5) == (1, 1)
