"""Codec threads for decoder children: who gets how many, and that they change no frame."""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rovertrain.video.decode import decode_to_file
from rovertrain.video.decode_protocol import DecodeDone, DecodeLimits, DecodeRequest
from rovertrain.video.decoder_pool import DecoderPool, codec_threads
from rovertrain.video.source import open_checked, open_video


def limits(threads: int) -> DecodeLimits:
    return DecodeLimits(max_bytes=1 << 30, max_pixels=1 << 24, max_seconds=3600, threads=threads)


def test_a_lone_session_gets_every_thread_and_a_queue_one_each() -> None:
    assert codec_threads(threads=2, busy=0, waiting=0) == 2  # one new drive, cache for the rest
    assert codec_threads(threads=8, busy=0, waiting=0) == 8
    assert codec_threads(threads=2, busy=0, waiting=5) == 1
    assert codec_threads(threads=8, busy=0, waiting=1) == 4  # two sessions: half each
    assert codec_threads(threads=8, busy=0, waiting=2) == 2
    assert codec_threads(threads=8, busy=6, waiting=0) == 2  # the last one: what is left
    assert codec_threads(threads=2, busy=1, waiting=0) == 1
    assert codec_threads(threads=1, busy=0, waiting=0) == 1


@given(st.integers(1, 64), st.integers(0, 40), st.randoms(use_true_random=False))
def test_the_pool_schedule_never_uses_more_threads_than_the_job(threads, sessions, rng) -> None:
    """The pool's start loop, with children finishing in any order."""
    running: list[int] = []
    waiting = sessions
    while waiting or running:
        while waiting and sum(running) < threads:
            waiting -= 1
            share = codec_threads(threads, sum(running), waiting)
            assert share >= 1
            if not running and not waiting:
                assert share == threads  # a lone session has every core
            running.append(share)
        assert sum(running) <= threads
        assert len(running) <= threads
        running.pop(rng.randrange(len(running)))


def textured_video(path: Path, codec: str, seconds: float = 3.0, fps: int = 30) -> Path:
    """Moving noise with B-frames where the codec has them: frame threads have work to get
    wrong (reordering, references decoded by another thread)."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        if codec == "libvpx":
            stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
        else:
            stream.codec_context.options = {"preset": "veryfast", "bf": "2"}
        for index in range(int(seconds * fps)):
            image = np.roll(base, (index * 2, index * 3), axis=(0, 1))
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


@pytest.mark.parametrize(("codec", "name"), [("libx264", "v.mp4"), ("libvpx", "v.webm")])
def test_threaded_decoding_writes_the_same_frames_as_one_thread(
    tmp_path: Path, codec: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codec threads without segments (a video with one keyframe, or another codec);
    segments are tests/video/test_segment_decode.py."""
    from rovertrain.video import segment_decode

    monkeypatch.setattr(segment_decode, "plan_for", lambda scan, codec, threads: None)
    video = textured_video(tmp_path / name, codec, seconds=2.0)
    outputs = []
    for threads in (1, 2, 3):
        sink = io.BytesIO()
        result = decode_to_file(video, 0.0, limits(threads), sink)
        outputs.append((sink.getvalue(), result.ticks, result.frame_times))
        assert result.stats.counts.decoded == 60
        assert result.stats.counts.segments == 1
    assert len(outputs[0][1]) == 20 and len(set(outputs[0][0])) > 1
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]


def test_the_codec_is_given_the_childs_threads(tmp_path: Path) -> None:
    video = textured_video(tmp_path / "v.webm", "libvpx", seconds=0.5)
    container_name, _ = open_checked(video, limits(3))
    with open_video(video, container_name, limits(3)) as (_container, stream):
        assert stream.codec_context.thread_count == 3
        assert stream.codec_context.thread_type.name in {"AUTO", "FRAME"}


def test_the_pool_hands_a_lone_session_every_thread(tmp_path: Path) -> None:
    video = textured_video(tmp_path / "v.webm", "libvpx", seconds=1.0)
    given: dict[str, int] = {}

    def request(session_id: str) -> DecodeRequest:
        return DecodeRequest(session_id, video, 0.0, tmp_path / f"{session_id}.frames",
                             tmp_path / f"{session_id}.json", session_id, "k", limits(1))  # fmt: skip

    pool = DecoderPool(threads=2, timeout_seconds=120, should_stop=lambda: False)
    start = pool._start

    def recording_start(context: Any, started: DecodeRequest) -> None:
        assert pool._busy_threads() + started.limits.threads <= 2
        given[started.session_id] = started.limits.threads
        start(context, started)

    pool._start = recording_start  # type: ignore[method-assign]
    outcomes = dict(pool.run([request("lone")]))
    assert outcomes == {"lone": DecodeDone()} and given == {"lone": 2}
    given.clear()
    outcomes = dict(pool.run([request("a"), request("b"), request("c")]))
    assert set(outcomes) == {"a", "b", "c"} and given["a"] == given["b"] == 1
    # c starts when a or b ends: one thread beside the other, two when both ended together
    # (the budget itself is asserted at every start above).
    assert given["c"] in (1, 2)
