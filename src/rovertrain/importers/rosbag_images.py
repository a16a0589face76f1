"""ROS camera messages to video frames: `sensor_msgs/Image` (raw, by encoding) and
`sensor_msgs/CompressedImage` (JPEG or PNG, sniffed from the bytes, not the `format` string,
which publishers fill loosely). A frame that cannot be used is a reason (a str), counted by
the import; the rest of the bag goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rovertrain.importers.pictures import MAX_IMAGE_PIXELS, PictureDecoder, picture_codec

if TYPE_CHECKING:
    from av.video.frame import VideoFrame

MAX_COMPRESSED_BYTES = 16 << 20

RAW_FORMATS: dict[str, tuple[str, int]] = {
    # ROS encoding (sensor_msgs/image_encodings.hpp) -> (FFmpeg pixel format, bytes per pixel)
    "rgb8": ("rgb24", 3),
    "bgr8": ("bgr24", 3),
    "8uc3": ("bgr24", 3),  # OpenCV's cv::Mat default order
    "rgba8": ("rgba", 4),
    "bgra8": ("bgra", 4),
    "8uc4": ("bgra", 4),
    "mono8": ("gray", 1),
    "8uc1": ("gray", 1),
    "mono16": ("gray16", 2),
    "16uc1": ("gray16", 2),
    "yuv422": ("uyvy422", 2),  # ROS's yuv422 is UYVY
    "uyvy": ("uyvy422", 2),
    "yuv422_yuy2": ("yuyv422", 2),
    "yuyv": ("yuyv422", 2),
    "bayer_rggb8": ("bayer_rggb8", 1),
    "bayer_bggr8": ("bayer_bggr8", 1),
    "bayer_gbrg8": ("bayer_gbrg8", 1),
    "bayer_grbg8": ("bayer_grbg8", 1),
}
"""Depth and float encodings (32FC1, 16UC1 depth under a depth topic) are not pictures of
the road: `choose_image` leaves depth topics out and an unknown encoding is dropped."""


def raw_pixels(
    encoding: str, width: int, height: int, step: int, bigendian: bool, data: np.ndarray
) -> tuple[np.ndarray, str] | str:
    """(the pixels as `from_ndarray` takes them, their pixel format), or why the image is
    dropped. Row padding (`step` beyond the pixels) is cut off."""
    known = RAW_FORMATS.get(encoding.lower())
    if known is None:
        return "unsupported_encoding"
    pixel_format, size = known
    if width < 2 or height < 2:
        return "corrupt_image"
    if width * height > MAX_IMAGE_PIXELS:
        return "too_large"
    if step < width * size or data.size < step * height:
        return "corrupt_image"
    rows = np.asarray(data, dtype=np.uint8)[: step * height].reshape(height, step)
    rows = rows[:, : width * size]
    if size == 1:
        return np.ascontiguousarray(rows), pixel_format
    if pixel_format == "gray16":
        order = ">u2" if bigendian else "<u2"
        return np.ascontiguousarray(rows).view(order).astype(np.uint16), "gray16le"
    if pixel_format in ("uyvy422", "yuyv422") and width % 2:
        return "corrupt_image"  # two pixels share their chroma
    if pixel_format == "uyvy422":  # FFmpeg takes YUYV from numpy: swap each byte pair
        pairs = rows.reshape(height, width // 2, 4)[..., [1, 0, 3, 2]]
        return np.ascontiguousarray(pairs.reshape(height, width, 2)), "yuyv422"
    return np.ascontiguousarray(rows.reshape(height, width, size)), pixel_format


def raw_frame(
    encoding: str, width: int, height: int, step: int, bigendian: bool, data: np.ndarray
) -> VideoFrame | str:
    """A `sensor_msgs/Image` as a frame, or why it is dropped."""
    import av

    pixels = raw_pixels(encoding, width, height, step, bigendian, data)
    if isinstance(pixels, str):
        return pixels
    array, pixel_format = pixels
    try:
        return av.VideoFrame.from_ndarray(array, format=pixel_format)
    except (ValueError, TypeError, av.error.FFmpegError):
        return "corrupt_image"


class CompressedDecoder:
    """`sensor_msgs/CompressedImage` data to frames: JPEG or PNG, known by its bytes."""

    def __init__(self) -> None:
        self.pictures = PictureDecoder()

    def decode(self, data: np.ndarray) -> VideoFrame | str:
        if data.size > MAX_COMPRESSED_BYTES:
            return "too_large"
        codec = picture_codec(bytes(data[:8]))
        if codec is None:
            return "unsupported_image_format"
        return self.pictures.decode(data.tobytes(), codec)
