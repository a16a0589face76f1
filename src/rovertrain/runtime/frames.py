"""Camera frame to model input: the one definition, for the decoder and the rover.

`prepare_frame(rgb, rotation)` takes an RGB uint8 H×W×3 frame of any size, applies the
display rotation (degrees clockwise-to-upright, as the container reports it; multiples of 90)
and resizes the full frame to OBS_HEIGHT×OBS_WIDTH (aspect not preserved) by area averaging
over integer pixel blocks (nearest neighbour along an axis that must grow). Output: uint8
OBS_HEIGHT×OBS_WIDTH×3, C-contiguous. Pure numpy.
"""

from __future__ import annotations

import functools

import numpy as np

from rovertrain.data.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH


@functools.lru_cache(maxsize=32)
def _axis_plan(source: int, target: int) -> tuple[bool, np.ndarray, np.ndarray]:
    """(reduce, indices, counts): block starts and sizes, or nearest-neighbour indices."""
    if source >= target:
        edges = np.floor(np.arange(target + 1) * source / target + 1e-9).astype(np.int64)
        edges[-1] = source
        counts = np.diff(edges)
        return True, edges[:-1].copy(), counts
    indices = np.minimum(((np.arange(target) + 0.5) * source / target).astype(np.int64), source - 1)
    return False, indices, np.ones(target, dtype=np.int64)


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
    rows_reduce, rows, row_counts = _axis_plan(image.shape[0], OBS_HEIGHT)
    cols_reduce, cols, col_counts = _axis_plan(image.shape[1], OBS_WIDTH)
    if rows_reduce:
        summed = np.add.reduceat(image, rows, axis=0, dtype=np.uint32)
    else:
        summed = image[rows].astype(np.uint32)
    if cols_reduce:
        summed = np.add.reduceat(summed, cols, axis=1, dtype=np.uint32)
    else:
        summed = summed[:, cols]
    area = (row_counts[:, None] * col_counts[None, :]).astype(np.uint32)[:, :, None]
    result: np.ndarray = ((summed + area // 2) // area).astype(np.uint8)
    return np.ascontiguousarray(result)
