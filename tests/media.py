"""Test media generated in code with PyAV, and recording folders around it."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def encode_video(
    path: Path,
    codec: str = "libvpx",
    container_format: str | None = None,
    seconds: float = 2.0,
    fps: int = 10,
    size: tuple[int, int] = (64, 48),
    pts_ms: list[int] | None = None,
    audio: bool = False,
) -> Path:
    width, height = size
    count = len(pts_ms) if pts_ms is not None else int(seconds * fps)
    with av.open(str(path), mode="w", format=container_format) as container:
        if pts_ms is not None:
            stream = container.add_stream(codec, rate=1000)
        else:
            stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec.startswith("libvpx"):
            stream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
        audio_stream = container.add_stream("aac", rate=8000) if audio else None
        for index in range(count):
            image = np.zeros((height, width, 3), dtype=np.uint8)
            image[:, : (index * 7) % width] = (200, 100, 50)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            if pts_ms is not None:
                frame.pts, frame.time_base = pts_ms[index], Fraction(1, 1000)
            else:
                frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
        if audio_stream is not None:
            samples = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), dtype=np.float32), format="fltp", layout="mono"
            )
            samples.sample_rate, samples.pts = 8000, 0
            for packet in audio_stream.encode(samples):
                container.mux(packet)
            for packet in audio_stream.encode():
                container.mux(packet)
    return path


def encode_audio_only(path: Path) -> Path:
    with av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream("aac", rate=8000)
        for index in range(8):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), dtype=np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 8000, index * 1024
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def add_session(
    root: Path,
    session_id: str,
    video: Path | bytes | None = None,
    video_name: str = "camera.webm",
    offset_ms: float = 0.0,
    commands: list[dict] | None = None,
) -> Path:
    directory = root / "recordings" / session_id
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / video_name
    if isinstance(video, Path):
        target.write_bytes(video.read_bytes())
    elif isinstance(video, bytes):
        target.write_bytes(video)
    if commands is None:
        commands = [{"t": t, "type": "drive", "values": {"speed": 0.5, "turn": 0.0}}
                    for t in range(0, 2000, 250)]  # fmt: skip
    (directory / "commands.ndjson").write_text("".join(json.dumps(c) + "\n" for c in commands))
    meta = {
        "format": "rovertrain-recording/1", "sessionId": session_id, "roverId": "test",
        "controlProfile": None, "video": {"file": video_name, "offsetMs": offset_ms},
        "commands": {"file": "commands.ndjson"},
    }  # fmt: skip
    (directory / "session.json").write_text(json.dumps(meta))
    return directory
