"""Pipeline benchmarks: parallel decoding, the window cache, and decoder memory vs length.

Prints ratios against reference runs in the same command:
- several sessions through the decoder pool (threads=2) vs one after another (threads=1):
  >= 1.5x required;
- a lone session (the common scheduled job: one new drive, a cache for the rest) through the
  pool with threads=2 (its child gets both threads: two keyframe segments in parallel) vs
  threads=1;
- a second `inspect` of unchanged recordings vs the first (cache): >= 20x required;
- peak RSS of a decoder child for a 4x longer video: should stay flat (one thread, and two
  segments).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from media import add_session, encode_video
from rovertrain.cli.inspect import inspection_request
from rovertrain.data.dataset import Unwatched, build_dataset
from rovertrain.protocol.events import EventStream


def inspect_seconds(root: Path, sessions: list[str], threads: int) -> float:
    request = inspection_request(root, sessions, threads)
    started = time.perf_counter()
    build_dataset(request, EventStream(None), Unwatched())
    return time.perf_counter() - started


def child_peak_rss(video: Path, threads: int = 1) -> float:
    program = (
        "import io, resource, sys\n"
        "from pathlib import Path\n"
        "from rovertrain.video.decode import DecodeLimits, decode_to_file\n"
        f"limits = DecodeLimits(1 << 40, 1 << 30, 1e9, {threads})\n"
        "decode_to_file(Path(sys.argv[1]), 0.0, limits, open('/dev/null', 'wb'))\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    output = subprocess.run([sys.executable, "-c", program, str(video)], capture_output=True,
                            check=True).stdout  # fmt: skip
    return int(output.strip()) / 1024


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def lone_session(scratch: Path, rounds: int = 3) -> None:
    """One session, 60 s 640x480 VP8, inspect with threads 2 vs 1, interleaved (fresh cache)."""
    video = encode_video(scratch / "lone.webm", "libvpx", "webm", seconds=60, fps=30,
                         size=(640, 480))  # fmt: skip
    best = {1: float("inf"), 2: float("inf")}
    for index in range(rounds):
        for threads in (1, 2):
            root = scratch / f"lone-{threads}-{index}"
            add_session(root, "lone", video)
            best[threads] = min(best[threads], inspect_seconds(root, ["lone"], threads))
    print(f"a lone 60 s 640x480 VP8 session: threads=1 {best[1]:.2f} s, threads=2 "
          f"{best[2]:.2f} s, ratio {best[1] / best[2]:.2f} ({load()})")  # fmt: skip


def main() -> None:
    print(load())
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        lone_session(scratch)
        sessions = [f"s{index}" for index in range(4)]
        sequential = 0.0
        for index, name in enumerate(sessions):
            video = encode_video(scratch / f"v{index}.webm", "libvpx", "webm", seconds=60, fps=30,
                                 size=(640, 480))  # fmt: skip
            add_session(scratch / "root", name, video)
            add_session(scratch / f"alone{index}", name, video)
            sequential += inspect_seconds(scratch / f"alone{index}", [name], 1)
        parallel = inspect_seconds(scratch / "root", sessions, 2)
        cached = inspect_seconds(scratch / "root", sessions, 2)
        print(f"4 sessions x 60 s 640x480 VP8: one after another {sequential:.2f} s, "
              f"pool of 2 {parallel:.2f} s, ratio {sequential / parallel:.2f} (>= 1.5 required) "
              f"({load()})")  # fmt: skip
        print(f"second inspect (cache): {cached:.3f} s, {parallel / cached:.1f}x faster "
              "(>= 20 required)")  # fmt: skip
        short = encode_video(scratch / "short.webm", "libvpx", "webm", seconds=30, fps=30,
                             size=(640, 480))  # fmt: skip
        long = encode_video(scratch / "long.webm", "libvpx", "webm", seconds=120, fps=30,
                            size=(640, 480))  # fmt: skip
        for threads in (1, 2):
            print(
                f"decoder peak RSS, threads={threads}: 30 s video "
                f"{child_peak_rss(short, threads):.0f} MiB, 120 s video "
                f"{child_peak_rss(long, threads):.0f} MiB (flat expected)"
            )


if __name__ == "__main__":
    main()
