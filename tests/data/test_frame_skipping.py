"""Frames no tick shows and no picture references are not decoded: the pure rules (which
packets are disposable, which frames are invisible) and their check against FFmpeg."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import av
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_segment_decode import VIDEOS, camera_video, decode, limits

from rovertrain.data import segment_decode
from rovertrain.data.decode import decode_to_file
from rovertrain.data.h264_nal import avcc_length_size, is_disposable
from rovertrain.data.tick_visibility import MARGIN_MS, invisible_frames

TICK = 100


def nal(header: int, payload: bytes = b"\x88\x84", size: int = 4) -> bytes:
    body = bytes([header]) + payload
    return len(body).to_bytes(size, "big") + body


# nal_ref_idc in bits 5-6, the type in bits 0-4: 0x01 a non-reference slice, 0x21 / 0x41 /
# 0x61 reference slices, 0x65 an IDR slice, 0x06 an SEI, 0x09 an access unit delimiter.
@pytest.mark.parametrize(
    ("packet", "expected"),
    [
        (nal(0x01), True),
        (nal(0x09, b"\x10") + nal(0x06) + nal(0x01) + nal(0x01), True),  # two slices, no refs
        (nal(0x01) + nal(0x21), False),  # one slice is a reference
        (nal(0x41), False),
        (nal(0x61), False),
        (nal(0x65), False),
        (nal(0x06), False),  # no slice at all
        (b"", False),
        (nal(0x01)[:-1], False),  # the length runs past the end
        (nal(0x01) + b"\x00\x00", False),  # a truncated length prefix
        (b"\x00\x00\x00\x00" + nal(0x01), False),  # an empty NAL unit
        (nal(0x81), False),  # the forbidden bit
        (nal(0x01, size=2), False),  # read with the wrong prefix size
    ],
)
def test_a_packet_is_disposable_only_when_every_slice_is_unreferenced(
    packet: bytes, expected: bool
) -> None:
    assert is_disposable(packet, 4) is expected
    assert is_disposable(memoryview(packet), 4) is expected


def test_the_prefix_size_comes_from_the_avcc_record() -> None:
    record = bytes([1, 0x64, 0, 0x1E, 0xFC | 3, 0xE1, 0])
    assert avcc_length_size(record) == 4
    assert avcc_length_size(bytes([1, 0x64, 0, 0x1E, 0xFC | 1, 0xE1, 0])) == 2
    assert avcc_length_size(bytes([1, 0x64, 0, 0x1E, 0xFC | 2, 0xE1, 0])) is None  # 3 bytes
    assert avcc_length_size(b"\x00\x00\x00\x01\x67\x64\x00") is None  # Annex B
    assert avcc_length_size(None) is None and avcc_length_size(b"\x01") is None
    assert is_disposable(nal(0x01, size=2), 2)


def test_disposable_packets_are_the_ones_ffmpeg_skips_as_non_reference(tmp_path: Path) -> None:
    """The parser agrees with FFmpeg's own `skip_frame=NONREF` on an x264 B-frame stream."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        scan = segment_decode.scan_packets(container, stream)
    assert 20 < sum(scan.disposable) < len(scan.pts) - 20  # both kinds are there
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        stream.codec_context.skip_frame = "NONREF"
        decoded = sorted(frame.pts for frame in container.decode(stream))
    assert decoded == sorted(
        pts for pts, disposable in zip(scan.pts, scan.disposable, strict=True) if not disposable
    )


def test_vp8_has_no_disposable_packets(tmp_path: Path) -> None:
    name, codec, options, _ = VIDEOS["vp8"]
    video = camera_video(tmp_path / name, codec, options)
    with av.open(str(video)) as container:
        scan = segment_decode.scan_packets(container, container.streams.video[0])
    assert len(scan.pts) == 180 and not any(scan.disposable)


def shown(times: list[float]) -> set[int]:
    """The tick writer's rule, directly: at each tick, the newest frame at or before it (the
    later one of equal times)."""
    order = sorted(range(len(times)), key=lambda index: times[index])
    result = set()
    first = math.ceil(min(times) / TICK) * TICK
    last = max(times)
    for tick in range(int(first), int(last) + 1, TICK):
        newest = [index for index in order if times[index] <= tick]
        if newest:
            result.add(max(newest, key=lambda index: (times[index], order.index(index))))
    return result


@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.integers(0, 3000).map(float),
                st.floats(0, 3000, allow_nan=False),
                st.integers(0, 30).map(lambda tick: tick * 100 + 1e-6),  # right by a tick
            ),
            st.booleans(),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_an_invisible_frame_is_shown_at_no_tick(frames: list[tuple[float, bool]]) -> None:
    times = [time for time, _ in frames]
    candidates = [candidate for _, candidate in frames]
    invisible = invisible_frames(times, candidates)
    assert invisible <= {index for index, candidate in enumerate(candidates) if candidate}
    assert not invisible & shown(times)


def test_at_30_fps_two_frames_in_three_are_invisible() -> None:
    times = [index * 1000 / 30 for index in range(30)]
    invisible = invisible_frames(times, [True] * 30)
    # 0, 100, 200 ... are ticks; the last frame has no successor.
    assert invisible == {index for index in range(29) if index % 3}
    assert invisible_frames(times, [False] * 30) == frozenset()


def test_frames_just_after_a_tick_or_sharing_a_time_are_kept() -> None:
    # The successor lands on the tick: it is the tick's frame (its time is checked exactly).
    assert invisible_frames([50.0, 100.0], [True, False]) == {0}
    assert invisible_frames([50.0, 100.0 + 1e-9], [True, False]) == frozenset()
    # The frame itself is on the tick, or just after it (its own time is not checked).
    assert invisible_frames([100.0, 150.0], [True, False]) == frozenset()
    assert invisible_frames([100.0 + MARGIN_MS / 2, 150.0], [True, False]) == frozenset()
    assert invisible_frames([100.0 + 2 * MARGIN_MS, 150.0], [True, False]) == {0}
    # Two frames at one time: which the writer keeps depends on the decoder's order.
    assert invisible_frames([30.0, 30.0, 60.0], [True, True, False]) == frozenset()
    with pytest.raises(ValueError, match="2 times for 1"):
        invisible_frames([1.0, 2.0], [True])


def test_a_codec_that_does_not_return_a_relied_on_frame_refuses_the_skipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame the skipping relied on goes missing (injected): the segments give way to
    the sequential decode, with its result."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    sequential, _ = decode(video, 1)
    keep = segment_decode._keep
    dropped: list[int] = []

    def losing_keep(job: Any, output: Any, frame: Any) -> None:
        if not dropped and output.frames > 3 and frame.pts > 60:
            dropped.append(frame.pts)
            return
        keep(job, output, frame)

    monkeypatch.setattr(segment_decode, "_keep", losing_keep)
    segmented, fields = decode(video, 2)
    assert dropped and segmented == sequential
    assert fields == {
        "decodeSegments": 1,
        "decodeFallback": "the codec did not return the frames the skipping relied on",
    }


def test_skipped_frames_are_reported(tmp_path: Path) -> None:
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    stats = decode_to_file(video, 0.0, limits(2), io.BytesIO())["stats"]
    assert stats["decodeSegments"] == 2 and stats["framesSkipped"] > 0
    assert stats["framesDecoded"] == 180  # skipped frames count, as the sequential decode's
    one = decode_to_file(video, 0.0, limits(1), io.BytesIO())["stats"]
    assert one["framesSkipped"] == 0 and one["framesDecoded"] == 180


def test_a_frame_time_other_than_the_decided_one_refuses_the_skipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skip decision used the wrong time for a decoded frame (injected: one bit off):
    the segments give way to the sequential decode, with its result."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    sequential, _ = decode(video, 1)
    times = segment_decode.SegmentPlan.packet_times_ms

    def one_bit_off(plan: Any, offset_ms: float) -> list[float]:
        result = times(plan, offset_ms)
        result[0] = math.nextafter(result[0], math.inf)  # the first keyframe's: decoded
        return result

    monkeypatch.setattr(segment_decode.SegmentPlan, "packet_times_ms", one_bit_off)
    segmented, fields = decode(video, 2)
    assert segmented == sequential
    assert fields == {
        "decodeSegments": 1,
        "decodeFallback": "a frame's time is not the one the skipping used",
    }
