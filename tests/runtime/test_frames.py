"""`prepare_frame` against its written definition, computed the slow and obvious way."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.observation import OBS_HEIGHT, OBS_WIDTH
from rovertrain.runtime.frames import axis_plan, prepare_frame


def reference_blocks(source: int, target: int) -> list[range]:
    """The module docstring's definition, one block at a time in Python integers."""
    if source >= target:
        return [range(k * source // target, (k + 1) * source // target) for k in range(target)]
    return [range((2 * k + 1) * source // (2 * target), (2 * k + 1) * source // (2 * target) + 1)
            for k in range(target)]  # fmt: skip


def reference_prepare(frame: np.ndarray, rotation: int) -> np.ndarray:
    image = np.rot90(frame, k=rotation // 90 % 4).astype(np.int64)
    rows = reference_blocks(image.shape[0], OBS_HEIGHT)
    columns = reference_blocks(image.shape[1], OBS_WIDTH)
    result = np.empty((OBS_HEIGHT, OBS_WIDTH, 3), dtype=np.uint8)
    for y, row_block in enumerate(rows):
        for x, column_block in enumerate(columns):
            block = image[row_block.start : row_block.stop, column_block.start : column_block.stop]
            area = len(row_block) * len(column_block)
            result[y, x] = (block.sum(axis=(0, 1)) + area // 2) // area
    return result


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 700),
    st.integers(1, 700),
    st.sampled_from([0, 90, 180, 270, -90, 450]),
    st.integers(0, 2**32 - 1),
)
def test_prepare_frame_matches_its_definition(height, width, rotation, seed) -> None:
    frame = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    np.testing.assert_array_equal(
        prepare_frame(frame, rotation), reference_prepare(frame, rotation)
    )


def test_prepare_frame_matches_its_definition_at_camera_sizes_and_extremes() -> None:
    rng = np.random.default_rng(3)
    for height, width in [(480, 640), (720, 1280), (1080, 1920), (2000, 30), (72, 97), (73, 96)]:
        frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        np.testing.assert_array_equal(prepare_frame(frame), reference_prepare(frame, 0))
    white = np.full((4000, 4000, 3), 255, dtype=np.uint8)  # block sums beyond 16 bits
    assert (prepare_frame(white) == 255).all()


def test_prepare_frame_reads_padded_and_strided_frames_as_they_are() -> None:
    rng = np.random.default_rng(4)
    padded = rng.integers(0, 256, (480, 660, 3), dtype=np.uint8)[:, :640]  # decoder line padding
    np.testing.assert_array_equal(prepare_frame(padded), prepare_frame(padded.copy()))
    every_other = rng.integers(0, 256, (960, 640, 3), dtype=np.uint8)[::2]
    np.testing.assert_array_equal(prepare_frame(every_other), reference_prepare(every_other, 0))


def test_prepare_frame_returns_fresh_arrays_also_across_threads() -> None:
    rng = np.random.default_rng(5)
    frames = [rng.integers(0, 256, (480, 640, 3), dtype=np.uint8) for _ in range(4)]
    expected = [reference_prepare(frame, 0) for frame in frames]
    first = prepare_frame(frames[0])
    prepare_frame(frames[1])  # the work arrays are reused: an earlier result must not change
    np.testing.assert_array_equal(first, expected[0])
    results: dict[int, list[np.ndarray]] = {}

    def work(index: int) -> None:
        results[index] = [prepare_frame(frames[index]) for _ in range(30)]

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, produced in results.items():
        for result in produced:
            np.testing.assert_array_equal(result, expected[index])


@given(st.integers(1, 5000), st.integers(1, 300))
def test_axis_plans_repeat_with_their_period(source, target) -> None:
    """The vectorised block sums rely on it: block k + per starts `span` pixels after block k."""
    plan = axis_plan(source, target)
    blocks = reference_blocks(source, target)
    assert plan.starts.tolist() == [block.start for block in blocks]
    assert plan.counts.tolist() == [len(block) for block in blocks]
    per = target // plan.repeats
    np.testing.assert_array_equal(plan.starts[per:], plan.starts[:-per] + plan.span)
    np.testing.assert_array_equal(plan.counts[per:], plan.counts[:-per])
    assert int(plan.starts[per - 1] + plan.counts[per - 1]) <= plan.span
