"""Camera frame to model input: the one definition, for the decoder and the rover.

`prepare_frame(rgb, rotation)` takes an RGB uint8 H×W×3 frame of any size, applies the
display rotation (degrees clockwise-to-upright, as the container reports it; multiples of 90)
and resizes the full frame to OBS_HEIGHT×OBS_WIDTH (aspect not preserved) by area averaging
over integer pixel blocks (nearest neighbour along an axis that must grow). Output: uint8
OBS_HEIGHT×OBS_WIDTH×3, C-contiguous. Pure numpy.

Definition: along an axis of `source` pixels shrunk to `target`, block k covers pixels
[k·source // target, (k+1)·source // target); growing, output k takes pixel
(2k+1)·source // (2·target). An output pixel is round-half-up of its block's mean:
(sum + area // 2) // area, exact integer arithmetic.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH


@dataclass(frozen=True)
class AxisPlan:
    """Which source pixels each output pixel of one axis sums.

    Block edges repeat every `span` = source/gcd pixels (480 -> 72: 3 blocks per 20 rows), so
    a block position inside the period is one vectorised reduction over all `repeats` periods.
    """

    source: int
    target: int
    starts: np.ndarray  # int64 [target]: first source pixel of each block
    counts: np.ndarray  # int64 [target]: pixels in each block (1 when the axis grows)

    @property
    def repeats(self) -> int:
        return math.gcd(self.source, self.target)

    @property
    def span(self) -> int:
        return self.source // self.repeats


@functools.lru_cache(maxsize=32)
def axis_plan(source: int, target: int) -> AxisPlan:
    index = np.arange(target, dtype=np.int64)
    if source >= target:
        starts = index * source // target
        counts = (index + 1) * source // target - starts
    else:
        starts = np.minimum((2 * index + 1) * source // (2 * target), source - 1)
        counts = np.ones(target, dtype=np.int64)
    starts.setflags(write=False)  # cached and shared between calls and threads
    counts.setflags(write=False)
    return AxisPlan(source, target, starts, counts)


def _block_sums(rows: np.ndarray, plan: AxisPlan, out: np.ndarray) -> None:
    """out[k] = sum of rows[starts[k] : starts[k] + counts[k]] (2-D, along axis 0)."""
    periods = rows.reshape(plan.repeats, plan.span, rows.shape[1])
    blocks = out.reshape(plan.repeats, plan.target // plan.repeats, out.shape[1])
    for position in range(blocks.shape[1]):
        start, count = int(plan.starts[position]), int(plan.counts[position])
        np.sum(periods[:, start : start + count], axis=1, dtype=out.dtype, out=blocks[:, position])


def _sum_dtype(largest: int) -> type:
    return np.uint16 if largest <= 0xFFFF else np.uint32


@dataclass(frozen=True)
class _Resize:
    """The precomputed pieces of one H×W -> OBS_HEIGHT×OBS_WIDTH resize."""

    rows: AxisPlan
    columns: AxisPlan
    row_dtype: type
    area: np.ndarray  # [OBS_WIDTH, 1, OBS_HEIGHT], the layout of the column sums
    half: np.ndarray


@functools.lru_cache(maxsize=32)
def _resize_plan(height: int, width: int) -> _Resize:
    rows, columns = axis_plan(height, OBS_HEIGHT), axis_plan(width, OBS_WIDTH)
    largest_area = int(rows.counts.max()) * int(columns.counts.max())
    area = (columns.counts[:, None] * rows.counts[None, :])[:, None, :]
    area = area.astype(_sum_dtype(largest_area * 255))
    half = area // 2
    area.setflags(write=False)
    half.setflags(write=False)
    return _Resize(rows, columns, _sum_dtype(int(rows.counts.max()) * 255), area, half)


class _Scratch(threading.local):
    """Per-thread work arrays, kept between calls: allocating a few hundred KiB afresh on every
    frame costs more in page faults than the arithmetic (measured: bench/bench_runtime.py)."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[str, tuple[int, ...], str], np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        key = (name, shape, np.dtype(dtype).str)
        array = self.arrays.get(key)
        if array is None:
            if len(self.arrays) > 16:
                self.arrays.clear()
            array = self.arrays[key] = np.empty(shape, dtype=dtype)
        return array


_scratch = _Scratch()


def check_frame(frame: np.ndarray) -> None:
    if not isinstance(frame, np.ndarray):
        raise TypeError(f"frame must be a numpy array, got {type(frame).__name__}")
    if frame.dtype != np.uint8:
        raise TypeError(f"frame must be uint8 RGB, got dtype {frame.dtype}")
    if frame.ndim != 3 or frame.shape[2] != OBS_CHANNELS:
        raise ValueError(f"frame must be H×W×3 RGB, got shape {frame.shape}")
    if frame.shape[0] < 1 or frame.shape[1] < 1:
        raise ValueError(f"frame is empty: shape {frame.shape}")


def prepare_frame(frame: np.ndarray, rotation: int = 0) -> np.ndarray:
    """uint8 OBS_HEIGHT×OBS_WIDTH×3 model input from an RGB uint8 H×W×3 frame."""
    check_frame(frame)
    if rotation % 90:
        raise ValueError(f"rotation must be a multiple of 90 degrees, got {rotation}")
    image = np.rot90(frame, k=(rotation // 90) % 4) if rotation % 360 else frame
    height, width = image.shape[:2]
    if (height, width) == (OBS_HEIGHT, OBS_WIDTH):
        return np.array(image, dtype=np.uint8, order="C")  # already the model's size
    plan = _resize_plan(height, width)
    values = width * OBS_CHANNELS
    # Rows first, on the (H, W·3) view: the one pass over the whole frame.
    summed_rows = _scratch.get("rows", (OBS_HEIGHT, values), plan.row_dtype)
    # reshape views a frame with padded lines as it is; a rotated frame is copied.
    _block_sums(image.reshape(height, values), plan.rows, summed_rows)
    # Columns: transpose the small row sums to (W, 3·OBS_HEIGHT) so that the column blocks
    # are contiguous rows too.
    columns_first = _scratch.get("columns", (width, OBS_CHANNELS, OBS_HEIGHT), plan.row_dtype)
    np.copyto(
        columns_first, summed_rows.reshape(OBS_HEIGHT, width, OBS_CHANNELS).transpose(1, 2, 0)
    )
    summed = _scratch.get("summed", (OBS_WIDTH, OBS_CHANNELS, OBS_HEIGHT), plan.area.dtype.type)
    _block_sums(columns_first.reshape(width, -1), plan.columns, summed.reshape(OBS_WIDTH, -1))
    summed += plan.half
    summed //= plan.area
    result: np.ndarray = np.ascontiguousarray(summed.transpose(2, 0, 1), dtype=np.uint8)
    return result
