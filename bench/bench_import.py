"""`rovertrain import donkey` throughput vs a bare PyAV encode of the same frames.

A tub of JPEGs (Donkeycar's 160x120 camera at 20 Hz) is imported in-process; the reference
reads the same JPEG files, decodes them and encodes them with the same VP8 settings into a
WebM, with nothing else (no catalog, no checks, no commands, no staging). Rounds are
interleaved in one process, so machine load hits both alike; the ratio of frames/s is printed
(>= 0.8 required: the import is bound by the video encode).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from rovertrain.importers.donkey import DonkeyOptions, import_tubs
from rovertrain.importers.report import ImportRun, Progress
from rovertrain.importers.writer import VP8_BIT_RATE, VP8_OPTIONS
from rovertrain.protocol.events import EventStream

FRAMES, HZ, WIDTH, HEIGHT, ROUNDS = 3000, 20, 160, 120, 3
CRLF = "\r\n"


def write_tub(tub: Path) -> None:
    """A Donkeycar tub v2 (manifest, catalogs, images/) driven along a sine."""
    (tub / "images").mkdir(parents=True)
    encoder = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = WIDTH, HEIGHT, "yuvj420p"
    encoder.time_base = Fraction(1, HZ)
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    catalogs: list[list[str]] = []
    for index in range(FRAMES):
        image = np.roll(base, index * 2, axis=1)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuvj420p")
        name = f"{index}_cam_image_array_.jpg"
        (tub / "images" / name).write_bytes(b"".join(bytes(p) for p in encoder.encode(frame)))
        record = {"_index": index, "_timestamp_ms": 1_764_500_000_000 + index * 1000 // HZ,
                  "_session_id": "26-11-30_0", "cam/image_array": name, "user/mode": "user",
                  "user/angle": round(float(np.sin(index / 20)), 3), "user/throttle": 0.4}  # fmt: skip
        if index % 1000 == 0:
            catalogs.append([])
        catalogs[-1].append(json.dumps(record, sort_keys=True) + CRLF)
    for number, lines in enumerate(catalogs):
        (tub / f"catalog_{number}.catalog").write_text("".join(lines), newline="")
    catalog_meta = {"paths": [f"catalog_{n}.catalog" for n in range(len(catalogs))],
                    "current_index": FRAMES, "max_len": 1000, "deleted_indexes": []}  # fmt: skip
    lines = [["cam/image_array", "user/angle", "user/throttle", "user/mode"],
             ["image_array", "float", "float", "str"], {}, {"created_at": 1764500000.0},
             catalog_meta]  # fmt: skip
    (tub / "manifest.json").write_text("".join(json.dumps(x) + CRLF for x in lines), newline="")


def bare_encode(tub: Path, out: Path) -> float:
    started = time.perf_counter()
    decoder = av.CodecContext.create("mjpeg", "r")
    with av.open(str(out), mode="w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=30)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.time_base = stream.codec_context.time_base = Fraction(1, 1000)
        stream.bit_rate = VP8_BIT_RATE
        stream.codec_context.options = dict(VP8_OPTIONS)
        stream.codec_context.thread_count = 1
        for index in range(FRAMES):
            data = (tub / "images" / f"{index}_cam_image_array_.jpg").read_bytes()
            frame = decoder.decode(av.Packet(data))[0].reformat(format="yuv420p")
            frame.pts, frame.time_base = index * 1000 // HZ, Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return time.perf_counter() - started


def import_once(tub: Path, root: Path) -> float:
    started = time.perf_counter()
    run = ImportRun(EventStream(None), Progress(False), dry_run=False)
    import_tubs([tub], DonkeyOptions(root, False, 0.05, 500.0, "bench"), run)
    elapsed = time.perf_counter() - started
    assert run.written == 1 and run.frames == FRAMES, (run.written, run.frames)
    return elapsed


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        write_tub(work / "tub")
        bare, full = [], []
        for round_number in range(ROUNDS):
            bare.append(bare_encode(work / "tub", work / f"bare{round_number}.webm"))
            root = work / f"root{round_number}"
            full.append(import_once(work / "tub", root))
            shutil.rmtree(root)
        bare_fps = FRAMES / statistics.median(bare)
        import_fps = FRAMES / statistics.median(full)
        ratio = import_fps / bare_fps
        print(
            f"import donkey: {import_fps:.0f} frames/s, bare PyAV JPEG decode + VP8 encode: "
            f"{bare_fps:.0f} frames/s ({FRAMES} frames {WIDTH}x{HEIGHT}, median of {ROUNDS}); "
            f"ratio {ratio:.2f} (>= 0.8 required)"
        )
        return 0 if ratio >= 0.8 else 1


if __name__ == "__main__":
    sys.exit(main())
