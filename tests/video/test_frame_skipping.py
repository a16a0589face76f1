"""H.264 pictures that nothing references and no tick shows are not decoded: the pure rules
(which packets are disposable, which frames are invisible), their agreement with FFmpeg, that
a usual video writes the same ticks as a decode of every frame, and that one thread and two
(segments, or the fallback with two codec threads) still write one result, counts included."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import av
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_segment_decode import VIDEOS, camera_video, decode, limits

from rovertrain.video import decode as decode_module
from rovertrain.video.decode import decode_to_file
from rovertrain.video.h264_nal import avcc_length_size, is_disposable
from rovertrain.video.packet_scan import SkipPlan, scan_packets, skippable_packets
from rovertrain.video.source import FrameClock, TickWriter
from rovertrain.video.tick_visibility import MARGIN_MS, invisible_frames

TICK = 100


def nal(header: int, payload: bytes = b"\x88\x84", size: int = 4) -> bytes:
    body = bytes([header]) + payload
    return len(body).to_bytes(size, "big") + body


# nal_ref_idc in bits 5-6, the type in bits 0-4: 0x01 a non-reference slice, 0x21 / 0x41 /
# 0x61 reference slices, 0x65 an IDR slice, 0x06 an SEI, 0x67 / 0x68 parameter sets, 0x09 an
# access unit delimiter, 0x0C filler, 0x02 a data partition.
@pytest.mark.parametrize(
    ("packet", "expected"),
    [
        (nal(0x01), True),
        (nal(0x09, b"\x10") + nal(0x01) + nal(0x01) + nal(0x0C), True),  # two slices, no refs
        (nal(0x01) + nal(0x21), False),  # one slice is a reference
        (nal(0x41), False),
        (nal(0x61), False),
        (nal(0x65), False),
        (nal(0x06) + nal(0x01), False),  # an SEI may matter to later pictures
        (nal(0x68) + nal(0x01), False),  # so does a parameter set
        (nal(0x67) + nal(0x01), False),
        (nal(0x02), False),  # a data partition
        (nal(0x06), False),  # no slice at all
        (b"", False),
        (nal(0x01)[:-1], False),  # the length runs past the end
        (nal(0x01) + b"\x00\x00", False),  # a truncated length prefix
        (b"\x00\x00\x00\x00" + nal(0x01), False),  # an empty NAL unit
        (nal(0x81), False),  # the forbidden bit
        (nal(0x01, size=2), False),  # read with the wrong prefix size
        (nal(0x01, bytes(300)), True),  # its length prefix reads 00 00 01 2D
        (b"\x00\x00\x01\x01\x88\x84", False),  # Annex B start codes
        (b"\x00\x00\x00\x01\x01", False),
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
        scan = scan_packets(container, stream)
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
        scan = scan_packets(container, container.streams.video[0])
    assert len(scan.pts) == 180 and not any(scan.disposable)


class IndexWriter(TickWriter):
    """The real tick writer, writing each frame's index instead of its converted picture."""

    def _convert(self) -> bytes:
        return int(self.pending).to_bytes(4, "big")


def written(times: list[float], leave_out: frozenset[int] = frozenset()) -> tuple[Any, ...]:
    """What the sequential decode's clock and writer make of frames at `times`, returned by
    the decoder in that order."""
    sink, clock = io.BytesIO(), FrameClock()
    writer = IndexWriter(sink, 0)
    for index, time in enumerate(times):
        if index in leave_out:
            continue
        placed = clock.place(time)
        if placed is not None:
            writer.add(index, placed)
    writer.finish()
    return sink.getvalue(), writer.ticks, writer.frame_times


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
def test_leaving_out_invisible_frames_writes_the_same_ticks(
    frames: list[tuple[float, bool]],
) -> None:
    """For frames that come out of the decoder in time order (ties in any order)."""
    frames = sorted(frames, key=lambda frame: frame[0])
    times = [time for time, _ in frames]
    candidates = [candidate for _, candidate in frames]
    invisible = invisible_frames(times, candidates)
    assert invisible <= {index for index, candidate in enumerate(candidates) if candidate}
    assert written(times, invisible) == written(times)


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


def every_frame_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode_module, "skippable_packets", lambda scan, base, offset: SkipPlan())


@pytest.mark.parametrize(
    ("kind", "container"),
    [("h264-b-frames", "mp4"), ("h264-open-gop", "mp4"), ("h264-b-frames", "mkv")],
)
def test_a_usual_video_writes_the_ticks_of_a_decode_of_every_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, container: str
) -> None:
    """MP4 (time base 1/15360) and Matroska (1/1000: times rounded to the millisecond, some on
    a tick); offsets that put ticks between frames and on them."""
    _, codec, options, _ = VIDEOS[kind]
    video = camera_video(tmp_path / f"v.{container}", codec, options)
    for offset in (0.0, 12.5, -250.0, 100 / 3):
        skipping = {threads: decode(video, threads, offset) for threads in (1, 2)}
        with monkeypatch.context() as patch:
            every_frame_decoded(patch)
            everything, _ = decode(video, 1, offset)
        assert everything[3].pop("framesSkipped") == 0
        for threads, (result, fields) in skipping.items():
            assert fields == {"decodeSegments": threads} and result[3].pop("framesSkipped") > 30
            assert result == everything  # frames, ticks, times, every other count


def damage_one_skipped_picture(video: Path) -> tuple[Path, int]:
    """Garbage over the slice data of a picture the decode leaves out (lengths and NAL headers
    kept, so the scan still reads it as a disposable packet)."""
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        scan = scan_packets(container, stream)
    index = sorted(skippable_packets(scan, base, 0.0).packets)[len(scan.pts) // 10]
    data = bytearray(video.read_bytes())
    position = scan.positions[index]
    length = int.from_bytes(data[position : position + 4], "big")  # the first slice's
    start = position + 4 + 3  # after the NAL header and the first slice header bytes
    data[start : position + 4 + length] = bytes(range(256))[: position + 4 + length - start]
    damaged = video.with_name("damaged-" + video.name)
    damaged.write_bytes(bytes(data))
    return damaged, scan.pts[index]


def test_a_damaged_picture_no_tick_shows_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoded, the damage would stop the decode there or mark the picture corrupt; left out,
    the recording keeps every tick, with one thread or with segments."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    damaged, _ = damage_one_skipped_picture(video)
    intact, _ = decode(video, 1)
    one, _ = decode(damaged, 1)
    assert one == intact and one[3]["framesSkipped"] > 0
    assert decode(damaged, 2) == (one, {"decodeSegments": 2})
    with monkeypatch.context() as patch:
        every_frame_decoded(patch)
        seen, _ = decode(damaged, 1)
    assert seen != intact  # the damage is real: a decode of every frame meets it


def test_skipped_frames_are_reported(tmp_path: Path) -> None:
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    two = decode_to_file(video, 0.0, limits(2), io.BytesIO()).stats.counts
    one = decode_to_file(video, 0.0, limits(1), io.BytesIO()).stats.counts
    assert two.segments == 2 and one.segments == 1
    assert two.skipped == one.skipped > 0
    assert two.decoded == one.decoded == 180  # skipped ones count


def broken_slice_headers(video: Path, index: int, scan: Any) -> Path:
    """Packet `index`'s slices name a picture parameter set that does not exist: the decoder
    refuses the packet (with one codec thread at once, with two a packet or so later)."""
    data = bytearray(video.read_bytes())
    position, end = scan.positions[index], scan.positions[index] + scan.sizes[index]
    while position < end:
        length = int.from_bytes(data[position : position + 4], "big")
        if data[position + 4] & 0x1F == 1:
            # first_mb 0, slice_type 1, pic_parameter_set_id 5 (exp-Golomb codes)
            data[position + 5 : position + 7] = bytes([0b1_010_0011, 0b0_1111111])
        position += 4 + length
    broken = video.with_name(f"broken-{index}-{video.name}")
    broken.write_bytes(bytes(data))
    return broken


@pytest.mark.parametrize("offset", [0.0, 12.5])
def test_an_error_in_a_decoded_picture_ends_alike_with_one_thread_or_two(
    tmp_path: Path, offset: float
) -> None:
    """The error stops the decode; two codec threads meet it a packet or so later than one,
    after more packets were left out. The counts must not depend on that."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        scan = scan_packets(container, stream)
    skip = skippable_packets(scan, base, offset).packets
    broken = [
        broken_slice_headers(video, index, scan)
        for index in range(20, 60)
        if index not in skip and index + 1 in skip and index not in scan.keyframes
    ][:3]
    assert broken
    for video in broken:
        one, _ = decode(video, 1, offset)
        two, fields = decode(video, 2, offset)
        assert one[3]["decodeErrors"] == 1 and "decodeFallback" in fields
        assert two == one  # frames, ticks, times and every count, framesSkipped included


def trimmed_by_an_edit_list(video: Path, trim_ms: int) -> Path:
    """The MP4's edit list ends `trim_ms` before the media: the demuxer returns the packets
    after the end (up to the next keyframe) marked to be decoded and discarded."""
    data = bytearray(video.read_bytes())
    edit = data.find(b"elst")
    assert edit > 0 and data[edit + 4] == 0 and struct.unpack_from(">I", data, edit + 8)[0] == 1
    header = data.find(b"mvhd")
    timescale = struct.unpack_from(">I", data, header + 16)[0]
    duration = struct.unpack_from(">I", data, edit + 12)[0]
    struct.pack_into(">I", data, edit + 12, duration - trim_ms * timescale // 1000)
    trimmed = video.with_name("trimmed-" + video.name)
    trimmed.write_bytes(bytes(data))
    return trimmed


def test_frames_an_edit_list_discards_are_nobodys_successor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    # 1042 ms: the last frame shown before the edit's end is a disposable B-frame whose
    # successor by the packets' times is discarded (checked: without the rule, with offset
    # 80 ms, the last tick goes missing).
    video = trimmed_by_an_edit_list(camera_video(tmp_path / name, codec, options), 1042)
    with av.open(str(video)) as container:
        scan = scan_packets(container, container.streams.video[0])
    assert sum(scan.discarded) > 5  # the trim is real
    for offset in (12.5, 50.0, 80.0):
        skipping, _ = decode(video, 1, offset)
        assert decode(video, 2, offset)[0] == skipping
        with monkeypatch.context() as patch:
            every_frame_decoded(patch)
            everything, _ = decode(video, 1, offset)
        assert skipping[3].pop("framesSkipped") > 0 and everything[3].pop("framesSkipped") == 0
        assert skipping == everything


class FakePacket:
    def __init__(self, pts: int) -> None:
        self.pts = pts

    def decode(self) -> list[int]:
        return [self.pts]


class FakeContainer:
    def __init__(self, pts: list[int]) -> None:
        self.packets = [FakePacket(value) for value in pts]

    def demux(self, stream: Any) -> list[FakePacket]:
        return self.packets


def test_where_the_demuxer_disagrees_with_its_scan_everything_after_is_decoded() -> None:
    left_out: list[int] = []
    container = FakeContainer([0, 3, 1, 2, 6, 4, 5, 9, 7, 8])
    frames = list(decode_module._frames(container, None, {2: 1, 5: 4, 8: 7}, left_out))
    assert left_out == [2, 5, 8] and frames == [0, 3, 2, 6, 5, 9, 8]
    left_out.clear()
    # The scan saw another packet at 5: no more skipping from there on.
    frames = list(decode_module._frames(container, None, {2: 1, 5: 40, 8: 7}, left_out))
    assert left_out == [2] and frames == [0, 3, 2, 6, 4, 5, 9, 7, 8]


def test_segments_whose_demuxer_disagrees_with_the_scan_give_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan says a skipped packet has another time than the demuxer then returns
    (injected): the segments refuse, and the sequential decode decodes everything from there,
    writing what a decode of every frame writes."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    with monkeypatch.context() as patch:
        every_frame_decoded(patch)
        everything, _ = decode(video, 1)
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        scan = scan_packets(container, stream)
    first_skipped = min(skippable_packets(scan, base, 0.0).packets)
    scan_for_real = decode_module.scan_packets

    def misread(container: Any, stream: Any) -> Any:
        misread_scan = scan_for_real(container, stream)
        misread_scan.pts[first_skipped] += 1  # 1/15360 s: still a frame no tick shows
        return misread_scan

    monkeypatch.setattr(decode_module, "scan_packets", misread)
    result, fields = decode(video, 2)
    assert fields == {
        "decodeSegments": 1,
        "decodeFallback": "the demuxer did not return the scanned packets",
    }
    assert result[3].pop("framesSkipped") == 0 and everything[3].pop("framesSkipped") == 0
    assert result == everything
