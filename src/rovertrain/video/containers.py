"""Container sniffing: choose the demuxer ourselves from the file's first bytes.

FFmpeg's own probing would happily open an HLS or concat playlist renamed `.mp4` and follow
its URLs, or a JPEG renamed `.webm`. We only ever hand FFmpeg an allow-listed demuxer.
"""

from __future__ import annotations


def sniff_container(head: bytes) -> str | None:
    """The demuxer to use for a file starting with `head`, or None if not allowed."""
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "matroska"  # Matroska and WebM share the EBML header
    if len(head) >= 12 and head[4:8] in (b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip"):
        return "mov"
    if head.startswith(b"RIFF") and head[8:12] == b"AVI ":
        return "avi"
    if head.startswith(b"DKIF"):
        return "ivf"
    if head.startswith(b"OggS"):
        return "ogg"
    if len(head) >= 377 and head[0] == 0x47 and head[188] == 0x47 and head[376] == 0x47:
        return "mpegts"
    return None


def describe_head(head: bytes) -> str:
    if not head:
        return "the file is empty"
    if head.startswith(b"#EXTM3U") or head.lstrip().startswith(b"ffconcat"):
        return "the file is a playlist, not a video"
    if head.startswith(b"\xff\xd8\xff"):
        return "the file is a JPEG image, not a video"
    if head.startswith(b"\x89PNG"):
        return "the file is a PNG image, not a video"
    return "the file is not a supported video container (Matroska/WebM, MP4/MOV, AVI, IVF, Ogg, TS)"
