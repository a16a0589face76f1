"""A lone new drive: decode + windowing of one session against a reference decode, same threads.

    python bench/bench_decode.py [--threads N] [--seconds S] [--rounds R] [--ab]

For a 640x480 30 fps video (VP8 and H.264, the random-noise content of earlier figures, S
seconds, default 300), interleaved in one process, R rounds (best of each):
- the reference: the `ffmpeg` CLI (`ffmpeg -threads N -i FILE -f null -`) when it is on PATH,
  otherwise the fastest bare PyAV decode loop at N threads (thread_type AUTO, FRAME and SLICE
  each timed; the best one counts) -- the line says which;
- rovertrain as a lone session's decoder child runs it: `decode_to_file` with the threads the
  pool gives a session with nothing queued behind it (`codec_threads(N, 0, 0)`, i.e. N);
- rovertrain with one thread, what every child had before.
The ratio reference/rovertrain is the throughput ratio (>= 1.3 wanted for the lone session).

`--ab`: the tick-frame conversion A/B instead (docs/performance.md, "Decoding with the shared
prepare_frame"): libswscale scaling straight to 96x72 (the decoder before INPUT_VERSION 2) vs
full-size rgb24 + `prepare_frame` (now), wall and CPU seconds.
Machines here are shared: the load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np

import rovertrain.data.decode as decode
from rovertrain.data.decode import DecodeLimits, TickWriter, decode_to_file
from rovertrain.data.decoder_pool import codec_threads
from rovertrain.data.observation import OBS_HEIGHT, OBS_WIDTH

FPS, WIDTH, HEIGHT = 30, 640, 480


def make_video(path: Path, codec: str, seconds: int) -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        if codec == "libvpx":
            stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
        else:
            stream.codec_context.options = {"preset": "ultrafast"}
        for index in range(seconds * FPS):
            frame = av.VideoFrame.from_ndarray(np.roll(base, index * 3, axis=1), format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def timed(run: Callable[[], Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of `run`, CPU of this process and its children, all threads."""
    before, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return wall, time.process_time() - before + child_cpu


def ffmpeg_cli(path: Path, threads: int) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-threads", str(threads), "-i", str(path),
                    "-f", "null", "-"], check=True)  # fmt: skip


def bare_pyav(path: Path, threads: int, thread_type: str) -> None:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = threads
        stream.codec_context.thread_type = thread_type
        for _frame in container.decode(stream):
            pass


def rovertrain_decode(path: Path, threads: int) -> None:
    limits = DecodeLimits(max_bytes=1 << 40, max_pixels=1 << 30, max_seconds=1e9, threads=threads)
    decode_to_file(path, 0.0, limits, io.BytesIO())


class SwscaleTickWriter(TickWriter):
    """The tick conversion before INPUT_VERSION 2: libswscale scales straight to 96x72."""

    def _convert(self) -> bytes:
        if self.pending_bytes is None:
            swap = self.rotation % 180 == 90
            width, height = (OBS_HEIGHT, OBS_WIDTH) if swap else (OBS_WIDTH, OBS_HEIGHT)
            rgb: Any = self.reformatter.reformat(
                self.pending, width=width, height=height, format="rgb24", threads=1
            ).to_ndarray()
            if self.rotation:
                rgb = np.ascontiguousarray(np.rot90(rgb, k=(self.rotation // 90) % 4))
            self.pending_bytes = rgb.tobytes()
        return self.pending_bytes


def swscale_decode(path: Path, threads: int) -> None:
    decode.TickWriter = SwscaleTickWriter  # type: ignore[misc]
    try:
        rovertrain_decode(path, threads)
    finally:
        decode.TickWriter = TickWriter  # type: ignore[misc]


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def interleaved(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) of each run over `rounds` rounds, the runs taking turns."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            samples[name].append(timed(run))
    return {name: min(values) for name, values in samples.items()}


def lone_session(path: Path, threads: int, rounds: int) -> None:
    lone = codec_threads(threads, busy=0, waiting=0)
    runs: dict[str, Callable[[], Any]] = {}
    if shutil.which("ffmpeg"):
        runs["ffmpeg CLI"] = lambda: ffmpeg_cli(path, threads)
    else:
        for kind in ("AUTO", "FRAME", "SLICE"):
            runs[f"bare PyAV {kind}"] = lambda kind=kind: bare_pyav(path, threads, kind)
    runs[f"rovertrain lone ({lone} threads)"] = lambda: rovertrain_decode(path, lone)
    runs["rovertrain 1 thread"] = lambda: rovertrain_decode(path, 1)
    print(f"{path.name}: {load()} at start")
    best = interleaved(runs, rounds)
    references = {name: figures for name, figures in best.items() if "rovertrain" not in name}
    reference_name = min(references, key=lambda name: references[name][0])
    reference = references[reference_name][0]
    for name, (wall, cpu) in best.items():
        print(f"  {name:30s} {wall:6.2f} s wall {cpu:6.2f} s CPU  "
              f"reference/this {reference / wall:.2f}")  # fmt: skip
    print(f"  reference: {reference_name} at {threads} threads; lone-session ratio "
          f"{reference / best[f'rovertrain lone ({lone} threads)'][0]:.2f} (>= 1.3 wanted); "
          f"{load()} at end")  # fmt: skip


def conversion_ab(path: Path, threads: int, rounds: int) -> None:
    print(f"{path.name}: {load()} at start")
    best = interleaved(
        {
            "swscale to 96x72 (old)": lambda: swscale_decode(path, threads),
            "rgb24 + prepare_frame (new)": lambda: rovertrain_decode(path, threads),
        },
        rounds,
    )
    (old_wall, old_cpu), (new_wall, new_cpu) = best.values()
    print(f"  old {old_wall:.2f} s wall {old_cpu:.2f} s CPU; new {new_wall:.2f} s wall "
          f"{new_cpu:.2f} s CPU; new/old wall {new_wall / old_wall:.2f}, CPU "
          f"{new_cpu / old_cpu:.2f}; {load()} at end")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ab", action="store_true", help="the tick-conversion A/B instead")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        for codec, name in (("libvpx", "vp8.webm"), ("libx264", "h264.mp4")):
            path = Path(directory) / name
            make_video(path, codec, arguments.seconds)
            if arguments.ab:
                conversion_ab(path, arguments.threads, arguments.rounds)
            else:
                lone_session(path, arguments.threads, arguments.rounds)


if __name__ == "__main__":
    main()
