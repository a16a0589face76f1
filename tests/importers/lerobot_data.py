"""LeRobotDataset v3 fixtures written in code, following huggingface/lerobot
(src/lerobot/datasets/utils.py: INFO_PATH, DEFAULT_DATA_PATH, DEFAULT_VIDEO_PATH,
DEFAULT_EPISODES_PATH; lerobot_dataset.py: episodes metadata columns): every episode's frames
in one shared MP4, one data parquet, one episodes parquet."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CAMERA = "observation.images.front"


def actions(length: int, episode: int) -> list[list[float]]:
    """(linear, angular): drive, turn, stop for the last quarter."""
    rows = []
    for frame in range(length):
        if frame >= length * 3 // 4:
            rows.append([0.0, 0.0])
        else:
            rows.append([0.5, round(0.6 * math.sin(frame / 5 + episode), 3)])
    return rows


def write_dataset(
    root: Path,
    lengths: Sequence[int],
    *,
    fps: int = 10,
    gop: int = 5,
    codec: str = "libx264",
    size: tuple[int, int] = (64, 48),
    robot_type: str = "lekiwi",
) -> Path:
    width, height = size
    video = root / "videos" / CAMERA / "chunk-000" / "file-000.mp4"
    video.parent.mkdir(parents=True)
    (root / "data" / "chunk-000").mkdir(parents=True)
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    total = sum(lengths)
    with av.open(str(video), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.gop_size = gop
        if codec == "libx264":
            stream.codec_context.options = {"preset": "ultrafast", "bf": "2"}
        for index in range(total):
            image = np.zeros((height, width, 3), dtype=np.uint8)
            image[:, : (index * 3) % width] = (40, 160, 220)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    columns: dict[str, list[object]] = {
        "episode_index": [], "frame_index": [], "timestamp": [], "index": [], "task_index": [],
        "action": [],
    }  # fmt: skip
    episodes: dict[str, list[object]] = {
        "episode_index": [], "tasks": [], "length": [], "data/chunk_index": [],
        "data/file_index": [], "dataset_from_index": [], "dataset_to_index": [],
        f"videos/{CAMERA}/chunk_index": [], f"videos/{CAMERA}/file_index": [],
        f"videos/{CAMERA}/from_timestamp": [], f"videos/{CAMERA}/to_timestamp": [],
        "meta/episodes/chunk_index": [], "meta/episodes/file_index": [],
        "stats/action/mean": [],
    }  # fmt: skip
    start = 0
    for episode, length in enumerate(lengths):
        for frame, action in enumerate(actions(length, episode)):
            columns["episode_index"].append(episode)
            columns["frame_index"].append(frame)
            columns["timestamp"].append(frame / fps)
            columns["index"].append(start + frame)
            columns["task_index"].append(0)
            columns["action"].append(action)
        values: dict[str, object] = {
            "episode_index": episode, "tasks": ["drive the course"], "length": length,
            "data/chunk_index": 0, "data/file_index": 0, "dataset_from_index": start,
            "dataset_to_index": start + length, f"videos/{CAMERA}/chunk_index": 0,
            f"videos/{CAMERA}/file_index": 0, f"videos/{CAMERA}/from_timestamp": start / fps,
            f"videos/{CAMERA}/to_timestamp": (start + length) / fps,
            "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
            "stats/action/mean": [0.25, 0.0],
        }  # fmt: skip
        for key, value in values.items():
            episodes[key].append(value)
        start += length
    table = pa.table(
        {
            **{key: value for key, value in columns.items() if key != "action"},
            "timestamp": pa.array(columns["timestamp"], pa.float32()),
            "action": pa.array(columns["action"], pa.list_(pa.float32(), 2)),
        }
    )
    pq.write_table(table, root / "data" / "chunk-000" / "file-000.parquet")
    pq.write_table(
        pa.table(episodes), root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    )
    info = {
        "codebase_version": "v3.0",
        "robot_type": robot_type,
        "total_episodes": len(lengths),
        "total_frames": total,
        "total_tasks": 1,
        "chunks_size": 1000,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 500,
        "fps": fps,
        "splits": {"train": f"0:{len(lengths)}"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": {
            CAMERA: {
                "dtype": "video",
                "shape": [height, width, 3],
                "names": ["height", "width", "channels"],
                "info": {"video.fps": fps, "video.codec": codec},
            },
            "action": {"dtype": "float32", "shape": [2], "names": ["x.vel", "theta.vel"]},
            "timestamp": {"dtype": "float32", "shape": [1], "names": None},
            "frame_index": {"dtype": "int64", "shape": [1], "names": None},
            "episode_index": {"dtype": "int64", "shape": [1], "names": None},
            "index": {"dtype": "int64", "shape": [1], "names": None},
            "task_index": {"dtype": "int64", "shape": [1], "names": None},
        },
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4))
    return root
