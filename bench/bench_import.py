"""Import throughput: `rovertrain import donkey` and `rovertrain import rosbag`.

    python bench/bench_import.py [donkey]
    python bench/bench_import.py rosbag [--minutes 10]

donkey: a tub of JPEGs (Donkeycar's 160x120 camera at 20 Hz) is imported in-process; the reference
reads the same JPEG files, decodes them and encodes them with the same VP8 settings into a
WebM, with nothing else (no catalog, no checks, no commands, no staging). Rounds are
interleaved in one process, so machine load hits both alike; the ratio of frames/s is printed
(>= 0.8 required: the import is bound by the video encode).

rosbag: a ROS 2 bag (MCAP) of a drive of `--minutes` (10): the synth road world as a
640x480 camera sees it (bench_decode's `camera_frame`) as JPEG `CompressedImage`s at 30 fps,
and `cmd_vel` at 20 Hz. Timed once each, one after the other: the import (in-process, its
default 2 encoder threads) and the reference, the `ffmpeg` CLI transcoding the same JPEGs to
VP8 with the import's settings (`-threads 2`). Printed: the import's time against the
drive's (< 1 required: a fleet's bags must import faster than they were driven) and against
the CLI's.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

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


def main_donkey() -> int:
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


BAG_FPS, BAG_COMMAND_HZ, BAG_WIDTH, BAG_HEIGHT = 30, 20, 640, 480


def _image_message(types: Any, stamp: int, data: bytes) -> Any:
    time_msg = types["builtin_interfaces/msg/Time"](sec=stamp // 10**9, nanosec=stamp % 10**9)
    header = types["std_msgs/msg/Header"](stamp=time_msg, frame_id="camera")
    array = np.frombuffer(data, np.uint8)
    return types["sensor_msgs/msg/CompressedImage"](header=header, format="jpeg", data=array)


def _twist_message(types: Any, speed: float, turn: float) -> Any:
    vector = types["geometry_msgs/msg/Vector3"]
    linear, angular = vector(x=speed, y=0.0, z=0.0), vector(x=0.0, y=0.0, z=turn)
    return types["geometry_msgs/msg/Twist"](linear=linear, angular=angular)


def write_drive_bag(bag: Path, jpegs: Path, minutes: float) -> int:
    """The bag, and every JPEG one after another in `jpegs` (the CLI's input); frames."""
    import random

    from bench_decode import camera_frame
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2
    from rosbags.typesys import Stores, get_typestore

    from rovertrain.sim.synth import simulate_session
    from rovertrain.sim.worlds import build

    store = get_typestore(Stores.ROS2_HUMBLE)
    encoder = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = BAG_WIDTH, BAG_HEIGHT, "yuvj420p"
    encoder.time_base = Fraction(1, BAG_FPS)
    grains = np.random.default_rng(1).normal(0, 3, (17, BAG_HEIGHT, BAG_WIDTH, 1))
    scenario = build("road", random.Random(7), "gamepad", 7)
    start_ns, second = 1_764_500_000 * 10**9, 10**9
    count = commands = 0
    writer = Writer2(bag, version=9, storage_plugin=StoragePlugin.MCAP)
    with writer, jpegs.open("wb") as raw:
        image_type, twist_type = "sensor_msgs/msg/CompressedImage", "geometry_msgs/msg/Twist"
        camera = writer.add_connection("/camera/image_raw/compressed", image_type, typestore=store)
        command = writer.add_connection("/cmd_vel", twist_type, typestore=store)

        def on_frame(rendered: np.ndarray) -> None:
            nonlocal count, commands
            stamp = start_ns + count * second // BAG_FPS
            picture = camera_frame(rendered, grains[count % len(grains)].astype(np.float32))
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            data = b"".join(bytes(p) for p in encoder.encode(frame.reformat(format="yuvj420p")))
            raw.write(data)
            message = store.serialize_cdr(_image_message(store.types, stamp, data), image_type)
            writer.write(camera, stamp + 15_000_000, message)  # received 15 ms after capture
            while start_ns + commands * second // BAG_COMMAND_HZ <= stamp:
                pose = scenario.world.pose
                twist = _twist_message(store.types, pose.speed * 0.5, pose.turn)
                sent = start_ns + commands * second // BAG_COMMAND_HZ
                writer.write(command, sent, store.serialize_cdr(twist, twist_type))
                commands += 1
            count += 1

        simulate_session(scenario, minutes * 60, 0.0, BAG_FPS, on_frame)
    return count


def main_rosbag(minutes: float) -> int:
    from bench_decode import ffmpeg_executable, ffmpeg_version

    from rovertrain.importers.rosbag import RosbagOptions, import_bags
    from rovertrain.importers.rosbag_map import BagMap

    executable = ffmpeg_executable()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        frames = write_drive_bag(work / "drive", work / "frames.mjpeg", minutes)
        size = sum(f.stat().st_size for f in (work / "drive").iterdir()) / 1e6
        started = time.perf_counter()
        run = ImportRun(EventStream(None), Progress(False), dry_run=False)
        options = RosbagOptions(work / "root", False, 0.05, 500.0, "bench", BagMap())
        import_bags([work / "drive"], options, run)
        imported = time.perf_counter() - started
        assert run.written == 1 and run.frames == frames, (run.written, run.frames, frames)
        reference = None
        if executable is not None:
            started = time.perf_counter()
            source = ["-f", "mjpeg", "-framerate", str(BAG_FPS), "-i", str(work / "frames.mjpeg")]
            vp8 = ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8"]
            vp8 += ["-b:v", str(VP8_BIT_RATE), "-threads", "2", str(work / "reference.webm")]
            subprocess.run([executable, "-v", "error", *source, *vp8], check=True)
            reference = time.perf_counter() - started
    drive = frames / BAG_FPS
    cli = "no ffmpeg CLI"
    if reference is not None and executable is not None:
        cli = f"ffmpeg CLI ({ffmpeg_version(executable)}) {reference:.1f} s, "
        cli += f"the import's time over the CLI's {imported / reference:.2f}"
    print(
        f"import rosbag: {frames} frames {BAG_WIDTH}x{BAG_HEIGHT} JPEG at {BAG_FPS} fps "
        f"({drive / 60:.1f} min drive, {size:.0f} MB MCAP) in {imported:.1f} s "
        f"({frames / imported:.0f} frames/s): {imported / drive:.2f} of the drive's time "
        f"(< 1 required); {cli}"
    )
    return 0 if imported < drive else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["rosbag"]:
        minutes = float(argv[argv.index("--minutes") + 1]) if "--minutes" in argv else 10.0
        return main_rosbag(minutes)
    return main_donkey()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
