"""Donkeycar tub v2 fixtures written in code, following donkeycar/parts/datastore_v2.py and
tub_v2.py: manifest.json (five JSON lines), catalog_<n>.catalog (JSON lines, CRLF) with their
.catalog_manifest, and JPEGs under images/ named `<index>_cam_image_array_.jpg`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

CRLF = "\r\n"


def jpeg(image: np.ndarray) -> bytes:
    """One JPEG (PyAV's MJPEG encoder, full-range YUV like a camera's)."""
    height, width = image.shape[:2]
    context = av.CodecContext.create("mjpeg", "w")
    context.width, context.height, context.pix_fmt = width, height, "yuvj420p"
    context.time_base = Fraction(1, 20)
    frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuvj420p")
    packets = [*context.encode(frame), *context.encode(None)]
    return b"".join(bytes(packet) for packet in packets)


def picture(index: int, size: tuple[int, int] = (64, 48)) -> np.ndarray:
    width, height = size
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[:, : (index * 5) % width] = (200, 120, 40)
    image[: (index * 3) % height, :, 2] = 180
    return image


@dataclass
class Row:
    """One record to write: the controls at a time, in a mode, in a Donkeycar session."""

    timestamp_ms: int
    angle: float
    throttle: float
    mode: str = "user"
    session: str | None = "26-11-30_0"
    image: np.ndarray | None = None
    extra: dict[str, object] = field(default_factory=dict)


def write_tub(
    tub: Path,
    rows: Sequence[Row],
    *,
    deleted: Sequence[int] = (),
    max_len: int = 1000,
    created_at: float = 1_764_500_000.25,
    size: tuple[int, int] = (64, 48),
    image_for: Callable[[int], bytes] | None = None,
) -> Path:
    tub.mkdir(parents=True, exist_ok=True)
    (tub / "images").mkdir(exist_ok=True)
    inputs = ["cam/image_array", "user/angle", "user/throttle", "user/mode"]
    types = ["image_array", "float", "float", "str"]
    catalogs: list[list[str]] = []
    for index, row in enumerate(rows):
        name = f"{index}_cam_image_array_.jpg"
        if image_for is not None:
            data = image_for(index)
        else:
            data = jpeg(row.image if row.image is not None else picture(index, size))
        (tub / "images" / name).write_bytes(data)
        record: dict[str, object] = {
            "_index": index,
            "_timestamp_ms": row.timestamp_ms,
            "cam/image_array": name,
            "user/angle": row.angle,
            "user/throttle": row.throttle,
            "user/mode": row.mode,
            **row.extra,
        }
        if row.session is not None:
            record["_session_id"] = row.session
        if index % max_len == 0:
            catalogs.append([])
        catalogs[-1].append(json.dumps(record, allow_nan=False, sort_keys=True) + CRLF)
    paths = []
    for number, lines in enumerate(catalogs):
        name = f"catalog_{number}.catalog"
        paths.append(name)
        (tub / name).write_text("".join(lines), newline="")
        meta = {
            "path": f"catalog_{number}.catalog_manifest",
            "created_at": created_at,
            "start_index": number * max_len,
            "line_lengths": [len(line) for line in lines],
        }
        (tub / f"catalog_{number}.catalog_manifest").write_text(
            json.dumps(meta, sort_keys=True) + CRLF, newline=""
        )
    sessions = sorted({row.session for row in rows if row.session})
    manifest_meta = {
        "created_at": created_at,
        "sessions": {
            "all_full_ids": sessions,
            "last_id": len(sessions) - 1,
            "last_full_id": sessions[-1] if sessions else "",
        },
    }
    catalog_meta = {
        "paths": paths,
        "current_index": len(rows),
        "max_len": max_len,
        "deleted_indexes": list(deleted),
    }
    lines = [json.dumps(inputs), json.dumps(types), json.dumps({}), json.dumps(manifest_meta),
             json.dumps(catalog_meta)]  # fmt: skip
    (tub / "manifest.json").write_text("".join(line + CRLF for line in lines), newline="")
    return tub


def drive_rows(
    seconds: float, hz: int = 20, start_ms: int = 1_764_500_000_000, session: str = "26-11-30_0"
) -> list[Row]:
    """A human driving: a steering sine, throttle on, a stop for a second in the middle."""
    rows = []
    count = int(seconds * hz)
    for index in range(count):
        t = index / hz
        throttle = 0.0 if 0.45 * seconds <= t < 0.45 * seconds + 1.0 else 0.5
        angle = round(float(np.sin(t)) * 0.8, 3)
        rows.append(Row(start_ms + round(index * 1000 / hz), angle, throttle, session=session))
    return rows
