"""A lone session decoded as keyframe segments on parallel threads writes exactly what a
sequential one-thread decode writes, or falls back to that decode."""

from __future__ import annotations

import io
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from rovertrain.contracts.errors import SkipSession
from rovertrain.video import segment_decode
from rovertrain.video.decode import decode_to_file
from rovertrain.video.decode_protocol import DecodeDone, DecodeLimits, DecodeRequest
from rovertrain.video.decoder_pool import DecoderPool
from rovertrain.video.packet_scan import scan_packets
from rovertrain.video.source import TickWriter

FPS = 30


def limits(threads: int, max_seconds: float = 3600) -> DecodeLimits:
    return DecodeLimits(
        max_bytes=1 << 30, max_pixels=1 << 24, max_seconds=max_seconds, threads=threads
    )


def texture(seed: int) -> np.ndarray:
    """Gradients with some grain: cheap to encode (libvpx realtime spends seconds on pure
    noise), and every moved frame differs."""
    y, x = np.mgrid[0:120, 0:160]
    smooth = np.stack([(x * 1.5) % 256, (y * 2) % 256, (x + y) % 256], axis=-1)
    grain = np.random.default_rng(seed).integers(0, 64, (120, 160, 3))
    return (smooth // 2 + grain).astype(np.uint8)


def picture(index: int, base: np.ndarray) -> av.VideoFrame:
    """The texture moved: inter prediction has work to do."""
    return av.VideoFrame.from_ndarray(np.roll(base, (index, index * 2), axis=(0, 1)), "rgb24")


def camera_video(
    path: Path,
    codec: str,
    options: dict[str, str],
    frames: int = 180,
    gop: int = 25,
    muxer_options: dict[str, str] | None = None,
) -> Path:
    """160x120, keyframes every `gop` frames (25: keyframe times fall between 100 ms ticks);
    180 frames leave room for 4 segments of at least MIN_SEGMENT_PACKETS."""
    base = texture(3)
    with av.open(str(path), mode="w", options=muxer_options or {}) as container:
        stream = container.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        stream.codec_context.gop_size = gop
        stream.codec_context.options = options
        for index in range(frames):
            frame = picture(index, base)
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


# As a browser's MediaRecorder; one encoder thread: libvpx's threads spin for seconds here.
VP8_REALTIME = {"deadline": "realtime", "cpu-used": "8", "threads": "1"}
X264_OPEN_GOP = "open-gop=1:keyint=25:min-keyint=25:scenecut=0:bframes=3:b-pyramid=normal"

VIDEOS = {
    "vp8": ("v.webm", "libvpx", VP8_REALTIME, None),
    "vp8-no-cues": ("v.webm", "libvpx", VP8_REALTIME, {"live": "1"}),
    "h264-b-frames": ("v.mp4", "libx264", {}, None),  # default preset: B-frames, deblocking
    "h264-open-gop": ("v.mp4", "libx264", {"x264-params": X264_OPEN_GOP}, None),
}


def decode(path: Path, threads: int, offset_ms: float = 0.0, **options: Any) -> Any:
    """(frames, ticks, frame times, stats without timing and segment fields) or the skip;
    the segment fields."""
    sink = io.BytesIO()
    try:
        result = decode_to_file(path, offset_ms, limits(threads, **options), sink)
    except SkipSession as skip:
        return ("skipped", skip.code, skip.reason), {}
    stats = result.stats.to_json()
    segment_fields = {
        name: stats.pop(name) for name in ("decodeSegments", "decodeFallback") if name in stats
    }
    del stats["decodeSeconds"]
    return (sink.getvalue(), result.ticks, result.frame_times, stats), segment_fields


@pytest.mark.parametrize("kind", sorted(VIDEOS))
def test_segments_write_the_frames_of_a_one_thread_decode(tmp_path: Path, kind: str) -> None:
    name, codec, options, muxer_options = VIDEOS[kind]
    video = camera_video(tmp_path / name, codec, options, muxer_options=muxer_options)
    # 12.5 ms: keyframes between ticks, so a segment's last frame is newest at the tick the
    # next segment would otherwise write; -250: ticks before the first frame are not written.
    for offset in (0.0, 12.5, -250.0):
        sequential, fields = decode(video, 1, offset)
        assert fields == {"decodeSegments": 1}
        frames, ticks, _times, stats = sequential
        assert stats["framesDecoded"] == 180 and len(ticks) == len(frames) // (96 * 72 * 3)
        if codec == "libx264":  # B-frames between ticks are not decoded
            assert 0 < stats["framesSkipped"] < 180 * 2 // 3
        for threads in (2, 3, 4):
            segmented, fields = decode(video, threads, offset)
            assert fields == {"decodeSegments": threads}
            assert segmented == sequential  # every count too, framesSkipped included


def test_open_gop_cuts_have_leading_pictures(tmp_path: Path) -> None:
    """The open-GOP video really has keyframes followed by frames that show before them."""
    name, codec, options, _ = VIDEOS["h264-open-gop"]
    video = camera_video(tmp_path / name, codec, options)
    with av.open(str(video)) as container:
        scan = scan_packets(container, container.streams.video[0])
    plan = segment_decode.plan_for(scan, "h264", threads=3)
    assert plan is not None and len(plan.segments) == 3
    assert any(
        before.end_packet > after.first_packet
        for before, after in zip(plan.segments, plan.segments[1:], strict=False)
    )


def browser_vp8(path: Path, times_ms: list[int], gop: int) -> Path:
    """VP8 muxed with the recorder's own millisecond times, repeats included."""
    base = texture(5)
    with av.open(str(path), "w", format="matroska") as container:
        stream = container.add_stream("libvpx", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        stream.codec_context.gop_size = gop
        stream.codec_context.options = VP8_REALTIME
        packets = []
        for index in range(len(times_ms)):
            frame = picture(index, base)
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            packets += stream.encode(frame)
        packets += stream.encode()
        for packet, time in zip(packets, times_ms, strict=True):
            packet.pts = packet.dts = time
            packet.time_base = Fraction(1, 1000)
            container.mux(packet)
    return path


def test_repeated_recorder_times_decode_the_same_in_segments(tmp_path: Path) -> None:
    times = [index * 33 for index in range(150)]
    for index in (10, 40, 41, 77, 120):
        times[index] = times[index - 1]  # repeated, inside segments
    times[60] = times[59]  # the keyframe at 60 repeats the time before it: no cut there
    video = browser_vp8(tmp_path / "browser.mkv", times, gop=30)
    for threads in (2, 3):
        with av.open(str(video)) as container:
            scan = scan_packets(container, container.streams.video[0])
        plan = segment_decode.plan_for(scan, "vp8", threads)
        assert plan is not None and 60 in plan.scan.keyframes
        assert 60 not in [segment.first_packet for segment in plan.segments]
    sequential, _ = decode(video, 1)
    assert sequential[3]["duplicateTimestamps"] == 6
    for threads in (2, 3):
        segmented, fields = decode(video, threads)
        assert fields["decodeSegments"] > 1 and segmented == sequential


def damaged(path: Path, damage: str) -> Path:
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        del data[int(len(data) * 0.7) :]
    else:  # garbage over a stretch in the last third
        start = int(len(data) * 0.75)
        data[start : start + 2000] = bytes(range(256)) * 7 + bytes(208)
    damaged_path = path.with_name(f"{damage}-{path.name}")
    damaged_path.write_bytes(bytes(data))
    return damaged_path


@pytest.mark.parametrize("kind", ["vp8", "h264-b-frames"])
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_segment_ends_as_the_sequential_decode(
    tmp_path: Path, kind: str, damage: str
) -> None:
    name, codec, options, _ = VIDEOS[kind]
    video = damaged(camera_video(tmp_path / name, codec, options, frames=180), damage)
    sequential, _ = decode(video, 1)
    for threads in (2, 3):
        segmented, fields = decode(video, threads)
        assert segmented == sequential  # same frames, stats and errors, or the same skip
        if (kind, damage) == ("h264-b-frames", "garbage"):
            # The H.264 decoder reports the garbage: the segments gave way to one decode.
            assert fields["decodeSegments"] == 1 and "decodeFallback" in fields


def test_a_video_over_the_duration_limit_is_refused_as_sequentially(tmp_path: Path) -> None:
    # The container says 6 s; a limit of 3 s refuses it before any decoding, either way.
    name, codec, options, _ = VIDEOS["vp8"]
    video = camera_video(tmp_path / name, codec, options)
    assert decode(video, 1, max_seconds=3.0) == decode(video, 3, max_seconds=3.0)
    assert decode(video, 3, max_seconds=3.0)[0][:2] == ("skipped", "too_large")


def test_segments_that_join_out_of_order_are_refused(tmp_path: Path) -> None:
    """The merge refuses rather than guess; the caller then decodes sequentially."""
    name, codec, options, _ = VIDEOS["vp8"]
    video = camera_video(tmp_path / name, codec, options)
    first, second = (
        segment_decode.SegmentOutput(io.BytesIO()),
        segment_decode.SegmentOutput(io.BytesIO()),
    )
    with av.open(str(video)) as container:
        frame = next(container.decode(video=0))
    for output, time in ((first, 500.0), (second, 400.0)):
        output.clock.place(time)
        output.first_time, output.rotation = time, 0
        output.writer = TickWriter(output.scratch, 0)
        output.writer.add(frame, time)
    with pytest.raises(segment_decode.SegmentRefused, match="out of order"):
        segment_decode._merge([first, second], limits(2))


def test_codecs_without_segment_tests_decode_sequentially(tmp_path: Path) -> None:
    video = camera_video(tmp_path / "v.mkv", "mpeg4", {})
    sequential, fields = decode(video, 2)
    assert fields == {"decodeSegments": 1} and sequential == decode(video, 1)[0]


def test_each_segment_codec_gets_one_thread_and_segments_never_exceed_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options, frames=240)
    opened: list[int] = []
    open_video = segment_decode.open_video

    def recording_open(path: Path, container_name: str, given: DecodeLimits) -> Any:
        opened.append(given.threads)
        return open_video(path, container_name, given)

    monkeypatch.setattr(segment_decode, "open_video", recording_open)
    for threads in (2, 3, 5):
        opened.clear()
        _, fields = decode(video, threads)
        assert fields == {"decodeSegments": threads}
        assert opened == [1] * threads  # one single-threaded codec per segment


def test_the_pool_decodes_a_lone_session_as_segments_and_leaves_no_scratch(
    tmp_path: Path,
) -> None:
    name, codec, options, _ = VIDEOS["vp8"]
    video = camera_video(tmp_path / name, codec, options)
    cache = tmp_path / "cache"
    cache.mkdir()
    request = DecodeRequest("lone", video, 0.0, cache / "lone.frames", cache / "lone.json",
                            "lone", "k", limits(1))  # fmt: skip
    pool = DecoderPool(threads=2, timeout_seconds=120, should_stop=lambda: False)
    assert dict(pool.run([request])) == {"lone": DecodeDone()}
    meta = json.loads((cache / "lone.json").read_text())
    assert meta["stats"]["decodeSegments"] == 2
    assert sorted(path.name for path in cache.iterdir()) == ["lone.frames", "lone.json"]
    sequential, _ = decode(video, 1)
    assert (cache / "lone.frames").read_bytes() == sequential[0]


def test_a_failing_segment_thread_gives_way_to_the_sequential_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any exception in one segment (here injected into the last one) stops the others and
    the session is decoded sequentially: same output, the reason in `decodeFallback`."""
    name, codec, options, _ = VIDEOS["h264-b-frames"]
    video = camera_video(tmp_path / name, codec, options)
    sequential, _ = decode(video, 1)
    keep = segment_decode._keep

    def failing_keep(job: Any, output: Any, frame: Any) -> None:
        if job.segment.end_pts is None and output.frames > 5:
            raise RuntimeError("injected")
        keep(job, output, frame)

    monkeypatch.setattr(segment_decode, "_keep", failing_keep)
    segmented, fields = decode(video, 3)
    assert segmented == sequential
    assert fields == {"decodeSegments": 1, "decodeFallback": "RuntimeError: injected"}
