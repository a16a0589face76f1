"""ROS image messages to frames: every raw encoding kept, row padding cut, JPEG and PNG."""

from __future__ import annotations

import numpy as np
import pytest

from importers.rosbags_data import jpeg, picture, png, raw_bytes
from rovertrain.importers.pictures import picture_codec
from rovertrain.importers.rosbag_images import CompressedDecoder, raw_frame, raw_pixels

RGB = picture(5, 16, 8)


def rgb_of(frame: object) -> np.ndarray:
    return frame.to_ndarray(format="rgb24").astype(int)  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8"])
def test_colour_encodings_with_padded_rows_give_the_picture(encoding: str) -> None:
    data, step = raw_bytes(RGB, encoding)
    frame = raw_frame(encoding, 16, 8, step, False, data)
    assert not isinstance(frame, str)
    assert np.array_equal(rgb_of(frame), RGB.astype(int))


def test_bgra_and_mono_encodings() -> None:
    bgra = np.concatenate([RGB[..., ::-1], np.full((8, 16, 1), 255, np.uint8)], axis=2)
    frame = raw_frame("bgra8", 16, 8, 64, False, bgra.reshape(-1))
    assert not isinstance(frame, str) and np.array_equal(rgb_of(frame), RGB.astype(int))
    grey = RGB[..., 1]
    mono = raw_frame("mono8", 16, 8, 16, False, grey.reshape(-1))
    assert not isinstance(mono, str)
    assert np.abs(rgb_of(mono)[..., 1] - grey.astype(int)).max() <= 1


@pytest.mark.parametrize("bigendian", [False, True])
def test_mono16_in_either_byte_order(bigendian: bool) -> None:
    values = (np.arange(16 * 8, dtype=np.uint16).reshape(8, 16) * 500).astype(np.uint16)
    data = values.astype(">u2" if bigendian else "<u2").view(np.uint8).reshape(-1)
    pixels = raw_pixels("mono16", 16, 8, 32, bigendian, data)
    assert not isinstance(pixels, str)
    array, pixel_format = pixels
    assert pixel_format == "gray16le" and np.array_equal(array, values)
    assert not isinstance(raw_frame("mono16", 16, 8, 32, bigendian, data), str)


def test_uyvy_and_yuyv_carry_the_same_picture() -> None:
    luma = np.tile(np.arange(0, 160, 10, dtype=np.uint8), (8, 1))
    yuyv = np.zeros((8, 16, 2), np.uint8)
    yuyv[..., 0], yuyv[..., 1] = luma, 128
    uyvy = yuyv.reshape(8, 8, 4)[..., [1, 0, 3, 2]].reshape(-1)
    from_yuyv = raw_frame("yuv422_yuy2", 16, 8, 32, False, yuyv.reshape(-1))
    from_uyvy = raw_frame("yuv422", 16, 8, 32, False, uyvy)
    assert not isinstance(from_yuyv, str) and not isinstance(from_uyvy, str)
    assert np.array_equal(rgb_of(from_yuyv), rgb_of(from_uyvy))
    assert raw_frame("yuv422", 15, 8, 30, False, uyvy) == "corrupt_image"


def test_bayer_images_are_demosaiced() -> None:
    mosaic = np.full((8, 16), 200, np.uint8)
    frame = raw_frame("bayer_rggb8", 16, 8, 16, False, mosaic.reshape(-1))
    assert not isinstance(frame, str)
    assert (frame.width, frame.height) == (16, 8)


def test_images_that_cannot_be_used_say_why() -> None:
    data, step = raw_bytes(RGB, "rgb8")
    assert raw_frame("32FC1", 16, 8, step, False, data) == "unsupported_encoding"
    assert raw_frame("rgb8", 16, 8, step, False, data[:-10]) == "corrupt_image"
    assert raw_frame("rgb8", 16, 8, 20, False, data) == "corrupt_image"  # step < row
    assert raw_frame("rgb8", 1, 1, 3, False, data) == "corrupt_image"
    assert raw_frame("rgb8", 100_000, 100_000, 300_000, False, data) == "too_large"


def test_compressed_images_are_sniffed_from_their_bytes() -> None:
    decoder = CompressedDecoder()
    from_jpeg = decoder.decode(np.frombuffer(jpeg(RGB), np.uint8))
    assert not isinstance(from_jpeg, str)
    assert np.abs(rgb_of(from_jpeg) - RGB.astype(int)).mean() < 12
    from_png = decoder.decode(np.frombuffer(png(RGB), np.uint8))
    assert not isinstance(from_png, str) and np.array_equal(rgb_of(from_png), RGB.astype(int))
    assert picture_codec(b"\x00\x00\x00\x18ftypavif") is None
    assert decoder.decode(np.frombuffer(b"GIF89a......", np.uint8)) == "unsupported_image_format"
    broken = np.frombuffer(b"\xff\xd8\xff\xe0" + bytes(200), np.uint8)
    assert decoder.decode(broken) == "corrupt_image"
    # the decoder is fresh after a broken image
    assert not isinstance(decoder.decode(np.frombuffer(jpeg(RGB), np.uint8)), str)
