"""Recordings that misbehave: each ends as expected and never takes the command down."""

from __future__ import annotations

import csv
import os
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from media import add_session, encode_audio_only, encode_video
from rovertrain.video.containers import sniff_container
from rovertrain.video.source import TickWriter

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "media-corpus"


@pytest.fixture(scope="module")
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("media") / "root"
    scratch = root.parent
    vp8 = encode_video(scratch / "vp8.webm", "libvpx", "webm")
    add_session(root, "vp8-webm", vp8)
    add_session(root, "vp9-webm", encode_video(scratch / "vp9.webm", "libvpx-vp9", "webm"))
    add_session(root, "h264-mp4", encode_video(scratch / "h.mp4", "libx264", "mp4", audio=True),
                "camera.mp4")  # fmt: skip
    add_session(root, "h264-mkv", encode_video(scratch / "h.mkv", "libx264", "matroska"),
                "camera.mkv")  # fmt: skip
    vfr = [0, 40, 90, 300, 310, 700, 720, 1500, 1900]
    add_session(root, "vfr-mkv", encode_video(scratch / "vfr.mkv", "libvpx", "matroska", pts_ms=vfr),
                "camera.mkv")  # fmt: skip
    add_session(root, "offset", vp8, offset_ms=250)
    add_session(root, "audio-only", encode_audio_only(scratch / "a.mp4"), "camera.mp4")
    data = vp8.read_bytes()
    add_session(root, "truncated", data[: len(data) // 2])
    flipped = bytearray(data)
    for position in range(200, len(flipped), 97):
        flipped[position] ^= 0xFF
    add_session(root, "bit-flipped", bytes(flipped))
    add_session(root, "zero-length", b"")
    add_session(root, "text-renamed", b"hello, this is not a video\n" * 20)
    add_session(root, "jpeg-renamed", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 500)
    secret = scratch / "secret.txt"
    secret.write_bytes(b"TOP-SECRET-CONTENT")
    hls = f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile://{secret}\n#EXT-X-ENDLIST\n"
    add_session(root, "hls-renamed", hls.encode(), "camera.mp4")
    add_session(root, "concat-renamed", f"ffconcat version 1.0\nfile '{secret}'\n".encode(),
                "camera.mp4")  # fmt: skip
    escape = add_session(root, "symlink-escape", None)
    (escape / "camera.webm").symlink_to(vp8)
    return root


EXPECTED = {
    "vp8-webm": None, "vp9-webm": None, "h264-mp4": None, "h264-mkv": None, "vfr-mkv": None,
    "offset": None, "audio-only": "no_video", "zero-length": "invalid_recording",
    "text-renamed": "invalid_recording", "jpeg-renamed": "invalid_recording",
    "hls-renamed": "invalid_recording", "concat-renamed": "invalid_recording",
    "symlink-escape": "unsafe_path",
}  # fmt: skip


def test_each_recording_ends_as_expected(cli, media_root: Path) -> None:
    result = cli("inspect", str(media_root))
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr
    datasets = {e["sessionId"]: e for e in result.of("dataset")}
    skipped = {e["sessionId"]: e for e in result.of("skipped")}
    for session_id, code in EXPECTED.items():
        if code is None:
            assert session_id in datasets, skipped.get(session_id)
            assert datasets[session_id]["windows"] > 0
        else:
            assert skipped[session_id]["code"] == code, skipped.get(session_id)
            assert skipped[session_id]["reason"]
    # Damaged files: either outcome, but always an event.
    for session_id in ("truncated", "bit-flipped"):
        assert session_id in datasets or session_id in skipped
    assert b"TOP-SECRET" not in "".join(map(str, result.events)).encode()
    assert result.kinds()[-1] == "inspected"
    vp8 = datasets["vp8-webm"]["diagnostics"]
    assert vp8["codec"] == "vp8" and vp8["width"] == 64 and vp8["framesDecoded"] == 20
    mp4 = datasets["h264-mp4"]["diagnostics"]
    assert mp4["codec"] == "h264" and mp4["streams"] == 2
    # Frames at 0..1900 ms give ticks 0..1900 (20); shifted by a 250 ms capture offset they
    # cover 250..2150 ms, so ticks 300..2100 (19).
    assert vp8["windows"] == 20 and datasets["offset"]["windows"] == 19
    vfr = datasets["vfr-mkv"]["diagnostics"]
    assert vfr["staleFrameWindows"] > 0 and vfr["usableWindows"] < vfr["windows"]


def test_second_inspect_reads_the_cache(cli, media_root: Path) -> None:
    first = cli("inspect", str(media_root), "vp8-webm", "h264-mp4")
    second = cli("inspect", str(media_root), "vp8-webm", "h264-mp4")
    assert all(e["diagnostics"]["cached"] for e in second.of("dataset"))
    assert [e["windows"] for e in first.of("dataset")] == [
        e["windows"] for e in second.of("dataset")
    ]


def test_corrupt_cache_entry_is_rebuilt(cli, media_root: Path) -> None:
    cli("inspect", str(media_root), "vp8-webm")
    cache = media_root / "training" / "cache"
    for frames in cache.glob("vp8-webm-*.frames"):
        with open(frames, "r+b") as stream:
            stream.truncate(10)
    result = cli("inspect", str(media_root), "vp8-webm")
    (event,) = result.of("dataset")
    assert event["diagnostics"]["cached"] is False and event["windows"] > 0


def test_sniffing_refuses_playlists_and_images() -> None:
    assert sniff_container(b"\x1a\x45\xdf\xa3rest") == "matroska"
    assert sniff_container(b"\x00\x00\x00\x18ftypmp42") == "mov"
    assert sniff_container(b"#EXTM3U\n") is None
    assert sniff_container(b"\xff\xd8\xff\xe0") is None
    assert sniff_container(b"") is None


def frames_at(times: list[float]) -> list:
    frames = []
    for index, _ in enumerate(times):
        image = np.full((48, 64, 3), index * 20, dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24")
        frame.time_base = Fraction(1, 1000)
        frames.append(frame)
    return frames


def test_tick_writer_picks_the_newest_frame_at_or_before_each_tick(tmp_path: Path) -> None:
    times = [30.0, 100.0, 130.0, 330.0]
    with open(tmp_path / "out", "wb") as sink:
        writer = TickWriter(sink, 0)
        for frame, t in zip(frames_at(times), times, strict=True):
            writer.add(frame, t)
        writer.finish()
    assert writer.ticks == [100, 200, 300]
    assert writer.frame_times == [100.0, 130.0, 130.0]
    assert os.path.getsize(tmp_path / "out") == 3 * 96 * 72 * 3


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/media-corpus is not present")
def test_real_media_corpus(cli, tmp_path: Path) -> None:
    rows = list(csv.DictReader((CORPUS / "PROVENANCE.tsv").open(), delimiter="\t"))
    root = tmp_path / "root"
    names = {}
    for index, row in enumerate(rows):
        session_id = f"corpus-{index:02d}"
        suffix = Path(row["file"]).suffix
        add_session(root, session_id, CORPUS / row["file"], f"video{suffix}",
                    commands=[{"t": 100, "type": "drive", "values": {"speed": 0.5}}])  # fmt: skip
        names[session_id] = row
    result = cli("inspect", str(root), timeout=900)
    assert result.code == 0 and "Traceback" not in result.stderr
    datasets = {e["sessionId"] for e in result.of("dataset")}
    skipped = {e["sessionId"]: e for e in result.of("skipped")}
    for session_id, row in names.items():
        assert session_id in datasets or session_id in skipped, row["file"]
        if row["expect"] == "windows":
            assert session_id in datasets, (row["file"], skipped.get(session_id))
        elif row["expect"] == "skip":
            assert session_id in skipped, row["file"]


def test_frame_clock_repairs_repeated_and_backwards_times() -> None:
    from rovertrain.video.source import FrameClock

    clock = FrameClock()
    placed = [clock.place(t) for t in (0.0, 33.0, 33.0, 33.0, 20.0, 66.0, 66.0)]
    assert placed[:2] == [0.0, 33.0] and placed[4] is None
    assert placed[2] == placed[3] == 33.0 and placed[5] == placed[6] == 66.0
    assert clock.duplicates == 3 and clock.backwards == 1


def test_display_rotation_is_applied_like_ffmpeg_autorotate(tmp_path: Path) -> None:
    # PyAV reports -90 for a display matrix that ffmpeg shows turned 90 degrees clockwise;
    # frame_rotation maps that to 270 and the writer turns the picture clockwise.
    image = np.zeros((48, 64, 3), dtype=np.uint8)
    image[:, :32] = (255, 0, 0)  # left half red
    frame = av.VideoFrame.from_ndarray(image, format="rgb24")
    with open(tmp_path / "out", "wb") as sink:
        writer = TickWriter(sink, 270)
        writer.add(frame, 0.0)
        writer.finish()
    picture = np.frombuffer((tmp_path / "out").read_bytes(), dtype=np.uint8).reshape(72, 96, 3)
    assert picture[:30, :, 0].mean() > 200 and picture[42:, :, 0].mean() < 50  # now on top


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/media-corpus is not present")
def test_rotation_metadata_of_a_real_file_is_read() -> None:
    from rovertrain.video.source import frame_rotation

    with av.open(str(CORPUS / "h264_rotated_buck_bunny.mp4")) as container:
        frame = next(container.decode(video=0))
    assert frame_rotation(frame) == 270


def test_repeated_timestamps_in_a_generated_file(tmp_path: Path) -> None:
    """Packets muxed with a repeated time (as browser recordings have) decode and are counted."""
    import io

    from rovertrain.video.decode import DecodeLimits, decode_to_file

    times = [0, 100, 100, 200, 300, 400, 500]
    path = tmp_path / "repeated.mkv"
    with av.open(str(path), "w", format="matroska") as container:
        stream = container.add_stream("libvpx", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        packets = []
        for index in range(len(times)):
            image = np.full((48, 64, 3), index * 30, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 10)
            packets += stream.encode(frame)
        packets += stream.encode()
        for packet, t in zip(packets, times, strict=True):
            packet.pts = packet.dts = t
            packet.time_base = Fraction(1, 1000)
            container.mux(packet)
    limits = DecodeLimits(1 << 30, 1 << 30, 1e6, 1)
    sink = io.BytesIO()
    result = decode_to_file(path, 0.0, limits, sink)
    assert result.stats.counts.duplicates == 1
    assert result.stats.to_json()["duplicateTimestamps"] == 1
    assert result.ticks == [0, 100, 200, 300, 400, 500]
    # The later of the two frames at 100 ms is the newer picture: it is the one kept.
    pictures = np.frombuffer(sink.getvalue(), dtype=np.uint8).reshape(-1, 72, 96, 3)
    assert abs(int(pictures[1].mean()) - 60) < abs(int(pictures[1].mean()) - 30)
