"""The decoder pool alone: real spawned children, outcomes, failures, limits and stopping."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from media import encode_video
from rovertrain.video.decode_protocol import DecodeDone, DecodeFailure, DecodeLimits, DecodeRequest
from rovertrain.video.decoder_pool import DecoderPool

LIMITS = DecodeLimits(max_bytes=1 << 30, max_pixels=1 << 24, max_seconds=3600, threads=1)


def request(tmp_path: Path, session_id: str, video: Path) -> DecodeRequest:
    return DecodeRequest(
        session_id=session_id,
        video_path=video,
        offset_ms=0.0,
        frames_path=tmp_path / f"{session_id}.frames",
        meta_path=tmp_path / f"{session_id}.json",
        name=session_id,
        key="k",
        limits=LIMITS,
    )


def test_children_decode_and_failures_cost_one_session_each(tmp_path: Path) -> None:
    good = encode_video(tmp_path / "good.webm", "libvpx", "webm", seconds=1.0)
    garbage = tmp_path / "garbage.webm"
    garbage.write_bytes(b"\x1aE\xdf\xa3" + b"\x00" * 2000)
    requests = [
        request(tmp_path, "good", good),
        request(tmp_path, "missing", tmp_path / "nope.webm"),
        request(tmp_path, "garbage", garbage),
    ]
    ticks: list[dict[str, int]] = []
    pool = DecoderPool(
        threads=2, timeout_seconds=120, should_stop=lambda: False, on_tick=ticks.append
    )
    outcomes = dict(pool.run(requests))
    assert outcomes["good"] == DecodeDone()
    assert (tmp_path / "good.frames").stat().st_size > 0 and (tmp_path / "good.json").exists()
    for name in ("missing", "garbage"):
        failure = outcomes[name]
        assert isinstance(failure, DecodeFailure) and failure.code and failure.reason
    assert ticks and all(len(active) <= 2 for active in ticks)
    assert not pool.active and not multiprocessing.active_children()


def test_a_stop_request_ends_the_pool_and_its_children(tmp_path: Path) -> None:
    video = encode_video(tmp_path / "v.webm", "libvpx", "webm", seconds=1.0)
    stop = {"now": False}
    pool = DecoderPool(threads=1, timeout_seconds=120, should_stop=lambda: stop["now"])

    def stop_on_first_tick(active: dict[str, int]) -> None:
        stop["now"] = True

    pool.on_tick = stop_on_first_tick
    outcomes = list(pool.run([request(tmp_path, f"s{i}", video) for i in range(3)]))
    assert len(outcomes) < 3
    assert not pool.active and not multiprocessing.active_children()
