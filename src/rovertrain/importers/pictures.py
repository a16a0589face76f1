"""Still pictures (a tub's JPEG files, a ROS bag's compressed images) to video frames.

One FFmpeg decoder per codec, made afresh after a picture that breaks it; a picture that
cannot be used is the reason it is dropped (a str), which the import counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from av.video.codeccontext import VideoCodecContext
    from av.video.frame import VideoFrame

MAX_IMAGE_PIXELS = 3840 * 2160


def picture_codec(head: bytes) -> str | None:
    """The decoder for a picture's first bytes: `mjpeg`, `png`, or None."""
    if head.startswith(b"\xff\xd8"):
        return "mjpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    return None


class PictureDecoder:
    def __init__(self) -> None:
        self.contexts: dict[str, VideoCodecContext] = {}

    def _context(self, codec: str) -> VideoCodecContext:
        import av

        if codec not in self.contexts:
            context = av.CodecContext.create(codec, "r")
            assert isinstance(context, av.video.codeccontext.VideoCodecContext)
            self.contexts[codec] = context
        return self.contexts[codec]

    def decode(self, data: bytes, codec: str) -> VideoFrame | str:
        """The picture as a frame, or why it is dropped (`corrupt_image`, `too_large`)."""
        import av

        try:
            frames = self._context(codec).decode(av.Packet(data))
        except (av.error.FFmpegError, ValueError):
            self.contexts.pop(codec, None)  # a clean state for the next
            return "corrupt_image"
        if not frames or frames[0].is_corrupt:
            return "corrupt_image"
        frame = frames[0]
        if frame.width * frame.height > MAX_IMAGE_PIXELS:
            return "too_large"
        if frame.width < 2 or frame.height < 2:
            return "corrupt_image"
        return frame
