"""Decode + windowing throughput vs a reference decode of the same file and thread count.

The reference is the `ffmpeg` CLI (`ffmpeg -threads N -i FILE -f null -`) when it is on PATH,
otherwise a bare PyAV decode loop; the ratio of wall times is printed (>= 0.85 required).
Also times a second `inspect` of unchanged recordings against the first (cache, >= 20x).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from rovertrain.data.decode import DecodeLimits, decode_to_file

SECONDS, FPS, WIDTH, HEIGHT = 300, 30, 640, 480


def make_video(path: Path, codec: str) -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        if codec == "libvpx":
            stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
        else:
            stream.codec_context.options = {"preset": "ultrafast"}
        for index in range(SECONDS * FPS):
            frame = av.VideoFrame.from_ndarray(np.roll(base, index * 3, axis=1), format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def reference_seconds(path: Path, threads: int) -> tuple[str, float]:
    if shutil.which("ffmpeg"):
        started = time.perf_counter()
        subprocess.run(["ffmpeg", "-v", "error", "-threads", str(threads), "-i", str(path),
                        "-f", "null", "-"], check=True)  # fmt: skip
        return "ffmpeg CLI", time.perf_counter() - started
    started = time.perf_counter()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = threads
        stream.codec_context.thread_type = "AUTO"
        for _frame in container.decode(stream):
            pass
    return "bare PyAV decode", time.perf_counter() - started


def ours_seconds(path: Path, threads: int) -> float:
    limits = DecodeLimits(max_bytes=1 << 40, max_pixels=1 << 30, max_seconds=1e9, threads=threads)
    started = time.perf_counter()
    decode_to_file(path, 0.0, limits, io.BytesIO())
    return time.perf_counter() - started


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with tempfile.TemporaryDirectory() as directory:
        for codec, name in (("libvpx", "vp8.webm"), ("libx264", "h264.mp4")):
            path = Path(directory) / name
            make_video(path, codec)
            reference_name, reference = min(reference_seconds(path, threads) for _ in range(2))
            ours = min(ours_seconds(path, threads) for _ in range(2))
            print(f"{name}: {reference_name} {reference:.2f} s, rovertrain {ours:.2f} s, "
                  f"throughput ratio {reference / ours:.2f} (>= 0.85 required)")  # fmt: skip


if __name__ == "__main__":
    main()
