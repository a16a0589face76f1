"""A lone new drive: decode + windowing of one session against a reference decode, same threads.

    python bench/bench_decode.py [--threads N] [--seconds S] [--rounds R] [--content C] [--ab]

For 640x480 30 fps videos of S seconds (default 300), VP8 and H.264, of two contents:
- `noise` (the content of earlier figures): random noise shifted 3 px a frame, x264
  `ultrafast` (no deblocking, no B-frames), libvpx realtime with FFmpeg's default keyframe
  interval (12 frames);
- `camera`: a smooth panning scene with sensor grain and slowly changing light, encoded as
  recorders do: x264 default preset (deblocking, B-frames, keyint 250) and VP8 as a browser's
  MediaRecorder (realtime, 2.5 Mbit/s, a keyframe every 100 frames);
interleaved in one process, R rounds (best of each):
- the reference, like for like: the `ffmpeg` CLI doing the work the product does, a full
  decode (loop filter included) of every frame with N codec threads, one frame per 100 ms
  converted to full-size rgb24 and shrunk to 96x72 by area averaging on one filter thread,
  written out raw (`ffmpeg -threads N -i FILE -filter_threads 1 -vf
  fps=10,format=rgb24,scale=96:72:flags=area -f rawvideo -`, to /dev/null): the CLI on PATH,
  else the static build of the `imageio-ffmpeg` wheel (the `bench` extra, installed by
  `make install`); without either, the fastest bare PyAV loop at N threads doing the same
  (thread_type AUTO, FRAME and SLICE each timed; the best one counts) -- the line says which;
- for scale only, not the reference: the CLI's bare decode (`-f null -`, no conversion);
- rovertrain as a lone session's decoder child runs it: `decode_to_file` with the threads the
  pool gives a session with nothing queued behind it (`codec_threads(N, 0, 0)`, i.e. N): N
  keyframe segments on N threads where the video allows (the line says how many);
- the same with every frame decoded, when the video has H.264 pictures the decode leaves out
  (nothing references them and no tick shows them, since decoder version 2): the same decode
  work as the reference;
- rovertrain with N codec threads and no segments (the lone session before segments);
- rovertrain with one thread (what every child had before that).
The ratio reference/rovertrain is the throughput ratio (>= 1.3 wanted for the lone session).
Both sides decode every picture in full (decoder version 3 applies the loop filter, as the
reference does); the lone session leaves out only pictures whose absence changes no tick frame.
A load-robust estimate follows for segmented decodes (critical path in CPU seconds against
the reference's CPU per thread): rough, for machines whose cores are never idle.

`--ab`: the tick-frame conversion A/B instead (docs/performance.md, "Decoding with the shared
prepare_frame"): libswscale scaling straight to 96x72 (the decoder before INPUT_VERSION 2) vs
full-size rgb24 + `prepare_frame` (now), wall and CPU seconds, no segments.
Machines here are shared: the load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import io
import os
import random
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

import rovertrain.video.decode as decode
import rovertrain.video.segment_decode as segment_decode
from rovertrain.contracts.observation import OBS_HEIGHT, OBS_WIDTH, TICK_MS
from rovertrain.video.decode import DecodeLimits, decode_to_file
from rovertrain.video.decoder_pool import codec_threads
from rovertrain.video.packet_scan import SkipPlan
from rovertrain.video.source import TickWriter

FPS, WIDTH, HEIGHT = 30, 640, 480


def make_noise_video(path: Path, codec: str, seconds: int) -> None:
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


def camera_frame(rendered: np.ndarray, grain: np.ndarray) -> np.ndarray:
    """A synth-world frame (320x240) as a 640x480 camera sees it: interpolated up (soft
    edges, as through a lens) with sensor grain that differs every frame."""
    big = np.repeat(np.repeat(rendered.astype(np.float32), 2, axis=0), 2, axis=1)
    big = (big + np.roll(big, 1, axis=0)) / 2
    big = (big + np.roll(big, 1, axis=1)) / 2
    return np.clip(big + grain, 0, 255).astype(np.uint8)


def make_camera_video(path: Path, codec: str, seconds: int) -> None:
    """The synth road world driven by its human driver for `seconds`, at 30 fps."""
    from rovertrain.sim.synth import simulate_session
    from rovertrain.sim.worlds import build

    rng = np.random.default_rng(1)
    grains = rng.normal(0, 3, (17, HEIGHT, WIDTH, 1)).astype(np.float32)
    scenario = build("road", random.Random(7), "gamepad", 7)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        if codec == "libvpx":
            stream.codec_context.gop_size = 100
            stream.codec_context.bit_rate = 2_500_000
            stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8",
                                             "threads": "1"}  # fmt: skip
        # libx264: its default preset (medium: deblocking, 3 B-frames, keyint 250).
        count = 0

        def on_frame(rendered: np.ndarray) -> None:
            nonlocal count
            frame = av.VideoFrame.from_ndarray(
                camera_frame(rendered, grains[count % len(grains)]), format="rgb24"
            )
            frame.pts, count = count, count + 1
            for packet in stream.encode(frame):
                container.mux(packet)

        simulate_session(scenario, seconds, 0.0, FPS, on_frame)
        for packet in stream.encode():
            container.mux(packet)


CONTENTS: dict[str, Callable[[Path, str, int], None]] = {
    "noise": make_noise_video,
    "camera": make_camera_video,
}


def timed(run: Callable[[], Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of `run`, CPU of this process and its children, all threads."""
    before, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return wall, time.process_time() - before + child_cpu


def ffmpeg_executable() -> str | None:
    """The `ffmpeg` CLI on PATH, else the static build in the imageio-ffmpeg wheel, else None."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg  # type: ignore[import-untyped]
    except ImportError:
        return None
    executable: str = imageio_ffmpeg.get_ffmpeg_exe()
    return executable


def ffmpeg_version(executable: str) -> str:
    first = subprocess.run([executable, "-version"], capture_output=True, text=True).stdout
    return first.splitlines()[0].split(" Copyright")[0] if first else "unknown version"


TICK_FRAMES = f"fps=10,format=rgb24,scale={OBS_WIDTH}:{OBS_HEIGHT}:flags=area"
"""The product's output in FFmpeg's filters: one frame per 100 ms, converted to full-size
rgb24, then shrunk to 96x72 by area averaging (`prepare_frame`'s definition, up to rounding)."""


def ffmpeg_cli(executable: str, path: Path, threads: int) -> None:
    """The reference: the product's decode and conversion work, by the `ffmpeg` CLI."""
    subprocess.run([executable, "-v", "error", "-threads", str(threads), "-i", str(path),
                    "-filter_threads", "1", "-vf", TICK_FRAMES, "-f", "rawvideo", "-"],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip


def ffmpeg_cli_decode_only(executable: str, path: Path, threads: int) -> None:
    """The CLI's bare decode, no conversion: less work than the product does (scale only)."""
    subprocess.run([executable, "-v", "error", "-threads", str(threads), "-i", str(path),
                    "-f", "null", "-"], check=True)  # fmt: skip


def bare_pyav(path: Path, threads: int, thread_type: str) -> None:
    """The reference without an `ffmpeg` CLI: a full decode of every frame, one frame per
    100 ms converted to rgb24 and shrunk to 96x72 by libswscale's area averaging."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = threads
        stream.codec_context.thread_type = thread_type
        next_tick = 0.0
        for frame in container.decode(stream):
            if frame.time is not None and frame.time >= next_tick:
                next_tick = frame.time + TICK_MS / 1000
                rgb = frame.reformat(format="rgb24")
                rgb.reformat(width=OBS_WIDTH, height=OBS_HEIGHT, interpolation="AREA")


def rovertrain_decode(path: Path, threads: int) -> dict[str, Any]:
    limits = DecodeLimits(max_bytes=1 << 40, max_pixels=1 << 30, max_seconds=1e9, threads=threads)
    return decode_to_file(path, 0.0, limits, io.BytesIO()).stats.to_json()


def without_skipping(run: Callable[[], Any]) -> None:
    """`run` with every frame decoded (the decode before frame skipping)."""
    skippable = decode.skippable_packets
    decode.skippable_packets = lambda scan, time_base, offset_ms: SkipPlan()
    try:
        run()
    finally:
        decode.skippable_packets = skippable


def without_segments(run: Callable[[], Any]) -> None:
    """`run` with the segment planner saying "one segment" (the decoder before segments)."""
    plan_for = segment_decode.plan_for
    segment_decode.plan_for = lambda scan, codec, threads: None  # type: ignore[assignment]
    try:
        run()
    finally:
        segment_decode.plan_for = plan_for


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
    # The sequential decode looks its writer up in `decode` (segments are off here).
    decode.TickWriter = SwscaleTickWriter  # type: ignore[misc]
    try:
        without_segments(lambda: rovertrain_decode(path, threads))
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
    executable = ffmpeg_executable()
    if executable:
        runs["ffmpeg CLI, like for like"] = lambda: ffmpeg_cli(executable, path, threads)
        runs["ffmpeg CLI, decode only"] = lambda: ffmpeg_cli_decode_only(executable, path, threads)
    else:
        for kind in ("AUTO", "FRAME", "SLICE"):
            runs[f"bare PyAV {kind}"] = lambda kind=kind: bare_pyav(path, threads, kind)
    stats = rovertrain_decode(path, lone)
    segments = stats["decodeSegments"]
    lone_name = f"rovertrain lone ({lone} thr, {segments} seg)"
    runs[lone_name] = lambda: rovertrain_decode(path, lone)
    if stats.get("framesSkipped"):
        runs["rovertrain lone, no skipping"] = lambda: without_skipping(
            lambda: rovertrain_decode(path, lone)
        )
    runs[f"rovertrain {lone} codec thr, no seg"] = lambda: without_segments(
        lambda: rovertrain_decode(path, lone)
    )
    runs["rovertrain 1 thread"] = lambda: rovertrain_decode(path, 1)
    fallback = stats.get("decodeFallback")
    print(f"{path.name} ({stats['framesDecoded']} frames, {stats['framesSkipped']} skipped, "
          f"{path.stat().st_size / 2**20:.1f} MiB"
          f"{', segments refused: ' + fallback if fallback else ''}): {load()} at start")  # fmt: skip
    if executable:
        print(f"  reference CLI: {executable} ({ffmpeg_version(executable)})")
    best = interleaved(runs, rounds)
    references = {
        name: figures
        for name, figures in best.items()
        if name.startswith(("ffmpeg CLI, like", "bare"))
    }
    reference_name = min(references, key=lambda name: references[name][0])
    reference = references[reference_name][0]
    for name, (wall, cpu) in best.items():
        print(f"  {name:30s} {wall:6.2f} s wall {cpu:6.2f} s CPU  "
              f"reference/this {reference / wall:.2f}")  # fmt: skip
    print(f"  reference: {reference_name} at {threads} threads; lone-session ratio "
          f"{reference / best[lone_name][0]:.2f} (>= 1.3 wanted); "
          f"{load()} at end")  # fmt: skip
    if segments > 1:
        critical = min(critical_path(path, lone) for _ in range(rounds))
        reference_cpu = references[reference_name][1]
        print(f"  load-robust estimate: lone critical path (main thread + slowest segment, CPU) "
              f"{critical:.2f} s; reference CPU / {threads} threads {reference_cpu / threads:.2f} s"
              f" (its best possible wall); ratio {reference_cpu / threads / critical:.2f}")  # fmt: skip


def critical_path(path: Path, threads: int) -> float:
    """CPU seconds of the main thread plus the slowest segment thread: the wall time of the
    segmented decode with a free core per thread (wall times on a loaded machine say how the
    scheduler shared it, CPU times do not)."""
    segment_cpu: list[float] = []
    decode_segment = segment_decode.decode_segment

    def timed_segment(job: Any, output: Any) -> None:
        started = time.thread_time()
        decode_segment(job, output)
        segment_cpu.append(time.thread_time() - started)

    segment_decode.decode_segment = timed_segment  # type: ignore[assignment]
    try:
        started = time.process_time()
        rovertrain_decode(path, threads)
        total = time.process_time() - started
    finally:
        segment_decode.decode_segment = decode_segment
    return total - sum(segment_cpu) + max(segment_cpu)


def conversion_ab(path: Path, threads: int, rounds: int) -> None:
    print(f"{path.name}: {load()} at start")
    best = interleaved(
        {
            "swscale to 96x72 (old)": lambda: swscale_decode(path, threads),
            "rgb24 + prepare_frame (new)": lambda: without_segments(
                lambda: rovertrain_decode(path, threads)
            ),
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
    parser.add_argument("--content", choices=[*CONTENTS, "both"], default="both")
    parser.add_argument("--ab", action="store_true", help="the tick-conversion A/B instead")
    arguments = parser.parse_args()
    contents = list(CONTENTS) if arguments.content == "both" else [arguments.content]
    with tempfile.TemporaryDirectory() as directory:
        for content in contents:
            for codec, name in (("libvpx", "vp8.webm"), ("libx264", "h264.mp4")):
                path = Path(directory) / f"{content}-{name}"
                CONTENTS[content](path, codec, arguments.seconds)
                if arguments.ab:
                    conversion_ab(path, arguments.threads, arguments.rounds)
                else:
                    lone_session(path, arguments.threads, arguments.rounds)


if __name__ == "__main__":
    main()
