"""Hostile and huge input: refused early, nothing outside the root is read."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from conftest import parse_events, write_job
from media import add_session, encode_video
from reliability.test_faults import FAST, Job

pytestmark = pytest.mark.timeout(600)


def test_huge_inputs_are_refused_in_preflight(cli, tmp_path: Path) -> None:
    root = tmp_path / "root"
    directory = add_session(root, "sparse-100gb", None)
    with open(directory / "camera.webm", "wb") as stream:
        stream.truncate(100 * 2**30)
    add_session(root, "huge-frame", claims_16384_squared(tmp_path), "camera.mkv")
    long_video = encode_video(tmp_path / "long.mkv", "libvpx", "matroska",
                              pts_ms=[0, 100, 48 * 3600 * 1000])  # fmt: skip
    add_session(root, "two-days", long_video, "camera.mkv")
    started = time.monotonic()
    result = cli("inspect", str(root))
    assert time.monotonic() - started < 60
    skipped = {e["sessionId"]: e["code"] for e in result.of("skipped")}
    assert skipped["sparse-100gb"] == skipped["two-days"] == "too_large"
    # The crafted file carries no real 16384x16384 picture (a test cannot afford to encode
    # one), so FFmpeg, told the pixel limit, refuses it as undecodable.
    assert skipped["huge-frame"] in ("too_large", "decode_error")


def claims_16384_squared(tmp_path: Path) -> bytes:
    """An MJPEG Matroska file whose track header and JPEG headers claim 16384x16384."""
    import av
    import numpy as np

    path = tmp_path / "small.mkv"
    with av.open(str(path), "w", format="matroska") as container:
        stream = container.add_stream("mjpeg", rate=10)
        stream.width, stream.height, stream.pix_fmt = 320, 256, "yuvj420p"
        image = np.zeros((256, 320, 3), dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuvj420p")
        frame.pts = 0
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    data = path.read_bytes()
    patches = [
        (b"\xb0\x82\x01\x40", b"\xb0\x82\x40\x00"),  # Matroska PixelWidth 320 -> 16384
        (b"\xba\x82\x01\x00", b"\xba\x82\x40\x00"),  # PixelHeight 256 -> 16384
        (b"\xff\xc0\x00\x11\x08\x01\x00\x01\x40", b"\xff\xc0\x00\x11\x08\x40\x00\x40\x00"),
    ]
    for old, new in patches:
        assert old in data
        data = data.replace(old, new)
    return data


def test_no_file_outside_the_root_is_opened(tmp_path: Path) -> None:
    """Symlinked folders and files, FIFOs: an audit hook watches every open.

    Traversal ids (`..`, absolute, NUL) never reach the disk: the job loader rejects them
    (tests/test_jobconfig.py) and so does the recording loader (tests/test_recording.py).
    """
    import os
    import subprocess

    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.webm"
    secret.write_bytes(encode_video(tmp_path / "v.webm", "libvpx", "webm").read_bytes())
    root = tmp_path / "root"
    add_session(root, "file-link", None)
    (root / "recordings" / "file-link" / "camera.webm").symlink_to(secret)
    add_session(outside, "folder-link", secret)
    (root / "recordings" / "folder-link").symlink_to(outside / "recordings" / "folder-link")
    fifo = add_session(root, "fifo", None)
    os.mkfifo(fifo / "camera.webm")
    program = f"""
import sys, json
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        seen.append(str(args[0]))
sys.addaudithook(hook)
from rovertrain.cli import main
sys.argv = ["rovertrain", "inspect", {str(root)!r}, "file-link", "folder-link", "fifo"]
try:
    main()
except SystemExit:
    pass
print(json.dumps(seen), file=sys.stderr)
"""
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    opened = json.loads(completed.stderr.decode().strip().splitlines()[-1])
    assert not [path for path in opened if str(outside) in os.path.realpath(path)]
    events = parse_events(completed.stdout)
    codes = {e["sessionId"]: e["code"] for e in events if e["kind"] == "skipped"}
    assert codes["file-link"] == codes["folder-link"] == codes["fifo"] == "unsafe_path"
    assert completed.returncode == 0


def test_exploding_learning_rate_never_publishes_nan(synth_copy: Path) -> None:
    job = Job(write_job(synth_copy, **{**FAST, "learningRate": 10, "precision": "fp32"}))
    code, events, _ = job.finish()
    last = events[-1]
    if last["kind"] == "error":
        assert last["code"] in ("non_finite_loss", "non_finite_weights") and code == 1
        directory = synth_copy / "training" / "checkpoints"
        assert not directory.exists() or not [p for p in directory.iterdir()]
    else:
        path = Path(last["published"]["id"])
        weights = synth_copy / "training" / "checkpoints" / path / "weights.safetensors"
        import torch

        assert all(bool(torch.isfinite(t).all()) for t in load_file(weights).values())


def test_interrupted_jobs_lose_no_steps(synth_copy: Path) -> None:
    total = 0
    for _ in range(3):
        job = Job(write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000}))
        job.until("progress")
        job.process.send_signal(signal.SIGTERM)
        code, events, _ = job.finish()
        assert code == 0 and events[-1]["trained"]
        reported = max(e["steps"] for e in events if e["kind"] == "progress")
        # Every step this job reported before the stop is kept, and the count only grows.
        assert events[-1]["steps"] >= reported > total
        total = events[-1]["steps"]
    from rovertrain.job.resume import load_resume

    assert load_resume(synth_copy)["steps"] == total


HOSTILE_LINES = [
    b'{"t": 1' + b"0" * 400 + b', "type": "drive"}',  # once an OverflowError: `internal`
    b'{"t": 1e400, "type": "drive"}',
    b'{"t": 100, "type": "drive", "values": {"speed": -1' + b"0" * 400 + b"}}",
    b"[" * 200_000 + b"]" * 200_000,
    b'{"t": 100, "type": "dr\xffive"}',
    b'{"t": 100, "type": "dri\x00ve"}',
    b'{"t": 100, "type": "drive", "type": "stop"}',
    b'{"t": 100, "type": "\\ud800"}',
    b'{"t": 100, "type": "drive", "x": "' + b"a" * (1 << 20) + b'"}',
    b'{"t": "100", "type": ["drive"], "values": {"speed": null}}',
]


def poison(root: Path, seed: int | None = None) -> tuple[str, str]:
    """One training session made unreadable, another's command log laced with hostile lines.

    With a seed, random damage instead (tests/test_recording_hostile.py has the in-process
    property test): the first session is then either skipped with a code or used.
    """
    import random

    from rovertrain.data.partition import is_held_out

    sessions = sorted(p.name for p in (root / "recordings").iterdir())
    training = [s for s in sessions if not is_held_out(s)]
    broken, laced = training[0], training[-1]
    folder = root / "recordings"
    if seed is None:
        (folder / broken / "session.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)
        log = folder / laced / "commands.ndjson"
        lines = log.read_bytes().replace(b"\n", b"\r\n").splitlines(keepends=True)
        for index, line in enumerate(HOSTILE_LINES):
            lines.insert(1 + index * len(lines) // len(HOSTILE_LINES), line + b"\n")
        log.write_bytes(b"\xef\xbb\xbf" + b"".join(lines))
        return broken, laced
    rng = random.Random(seed)
    name = rng.choice(["session.json", "commands.ndjson"])
    data = bytearray((folder / broken / name).read_bytes())
    for _ in range(rng.randint(1, 8)):
        position = rng.randrange(len(data) + 1)
        choice = rng.random()
        if choice < 0.3:
            data[position:position] = rng.choice(HOSTILE_LINES)[: rng.randint(1, 64)]
        elif choice < 0.6:
            data[position:position] = rng.randbytes(rng.randint(1, 8))
        elif choice < 0.8:
            del data[position : position + rng.randint(1, 200)]
        elif data:
            data[min(position, len(data) - 1)] = rng.randrange(256)
    (folder / broken / name).write_bytes(bytes(data))
    return broken, laced


def test_one_hostile_session_among_good_ones(synth_copy: Path) -> None:
    """The job completes and trains on every other session (the laced one included)."""
    broken, laced = poison(synth_copy)
    # What is checked is the reading; two steps show the job trained on what it read.
    code, events, _ = Job(write_job(synth_copy, **{**FAST, "maxStepsPerJob": 2})).finish()
    last = events[-1]
    assert code == 0 and last["kind"] == "complete" and last["trained"], last
    skipped = {e["sessionId"]: e["code"] for e in events if e["kind"] == "skipped"}
    assert skipped == {broken: "invalid_recording"}
    sessions = sorted(p.name for p in (synth_copy / "recordings").iterdir())
    assert sorted(last["accepted"]) == sorted(set(sessions) - {broken})
    laced_row = next(e for e in events if e["kind"] == "dataset" and e["sessionId"] == laced)
    assert laced_row["diagnostics"]["invalidCommandLines"] == len(HOSTILE_LINES)


@pytest.mark.long
@pytest.mark.parametrize("seed", range(12))
def test_randomly_damaged_session_among_good_ones(synth_copy: Path, seed: int) -> None:
    broken, _ = poison(synth_copy, seed)
    code, events, _ = Job(write_job(synth_copy, **FAST)).finish()
    last = events[-1]
    assert code == 0 and last["kind"] == "complete" and last["trained"], (seed, last)
    skipped = {e["sessionId"] for e in events if e["kind"] == "skipped"}
    sessions = {p.name for p in (synth_copy / "recordings").iterdir()}
    assert skipped <= {broken} and set(last["accepted"]) == sessions - skipped
