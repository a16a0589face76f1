"""Camera frame to model input: the one definition, for the decoder and the rover.

`prepare_frame(rgb, rotation)` takes an RGB uint8 H×W×3 frame of any size, applies the
display rotation (degrees clockwise-to-upright, as the container reports it; multiples of 90)
and resizes the full frame to OBS_HEIGHT×OBS_WIDTH (aspect not preserved) by area averaging
over integer pixel blocks (nearest neighbour along an axis that must grow). Output: uint8
OBS_HEIGHT×OBS_WIDTH×3, C-contiguous. Pure numpy.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from rovertrain.data.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH


@functools.lru_cache(maxsize=32)
def _axis_plan(source: int, target: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, counts, longer): block starts and sizes along one axis (nearest-neighbour
    blocks of one pixel when the axis must grow), and the blocks one pixel longer than the
    shortest (block sizes differ by at most one)."""
    if source >= target:
        edges = np.floor(np.arange(target + 1) * source / target + 1e-9).astype(np.int64)
        edges[-1] = source
        starts, counts = edges[:-1].copy(), np.diff(edges)
    else:
        starts = np.minimum(
            ((np.arange(target) + 0.5) * source / target).astype(np.int64), source - 1
        )
        counts = np.ones(target, dtype=np.int64)
    return starts, counts, np.flatnonzero(counts > counts.min())


def _row_block_sums(image: np.ndarray, target: int, dtype: type) -> np.ndarray:
    """Sum of each block of rows of a 2-D array, as `dtype`.

    Block edges repeat every source/gcd rows (480 -> 72: 3 blocks per 20 rows), so the rows are
    viewed as (periods, period, width) and each block position is one reduction over all the
    periods at once; sizes without a short period fall back to gathering (`_block_sums`)."""
    source = image.shape[0]
    common = math.gcd(source, target)
    per_period = target // common
    if source < target or per_period > 8:
        return _block_sums(image, 0, target, dtype)
    starts, counts, _ = _axis_plan(source, target)
    periods = image.reshape(common, source // common, image.shape[1])
    total: np.ndarray = np.empty((common, per_period, image.shape[1]), dtype=dtype)
    for block in range(per_period):
        start = int(starts[block])
        rows = periods[:, start : start + int(counts[block])]
        np.sum(rows, axis=1, dtype=dtype, out=total[:, block])
    return total.reshape(target, image.shape[1])


def _block_sums(image: np.ndarray, axis: int, target: int, dtype: type) -> np.ndarray:
    """Sum of each block of pixels along `axis` (0: rows, 1: columns), as `dtype`."""
    starts, counts, longer = _axis_plan(image.shape[axis], target)
    shortest = int(counts.min())
    total: np.ndarray = np.take(image, starts, axis=axis).astype(dtype)
    for offset in range(1, shortest):
        total += np.take(image, starts + offset, axis=axis)
    if longer.size:
        extra = np.take(image, starts[longer] + shortest, axis=axis)
        if axis == 0:
            total[longer] += extra
        else:
            total[:, longer] += extra
    return total


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
    row_counts = _axis_plan(height, OBS_HEIGHT)[1]
    col_counts = _axis_plan(width, OBS_WIDTH)[1]
    # Rows first on the (H, W*3) view; uint16 holds a block of rows unless it is very tall.
    rows_dtype = np.uint16 if int(row_counts.max()) * 255 <= 0xFFFF else np.uint32
    flat = np.ascontiguousarray(image).reshape(height, width * OBS_CHANNELS)
    rows = _row_block_sums(flat, OBS_HEIGHT, rows_dtype).reshape(OBS_HEIGHT, width, OBS_CHANNELS)
    summed = _block_sums(rows, 1, OBS_WIDTH, np.uint32)
    area = (row_counts[:, None] * col_counts[None, :]).astype(np.uint32)[:, :, None]
    result: np.ndarray = ((summed + area // 2) // area).astype(np.uint8)
    return result
