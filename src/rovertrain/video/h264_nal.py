"""Which H.264 packets no other picture needs (pure: bytes in, answers out).

A picture whose slices all carry nal_ref_idc 0 is never used as a reference, so a decoder
that is not fed its packet decodes every other picture as before (FFmpeg's own
`skip_frame=nonref` rests on the same rule). Only the length-prefixed layout of MP4 and
Matroska (avcC) is read, and only packets made of nothing but such slices, access unit
delimiters and filler count: a packet that also carries parameter sets or SEI (which later
pictures may use) or anything this parser does not understand is decoded.
"""

from __future__ import annotations

_NON_IDR_SLICE = 1
_HARMLESS = frozenset({9, 12})  # access unit delimiter, filler data


def avcc_length_size(extradata: bytes | None) -> int | None:
    """Bytes in each NAL unit's length prefix, from an avcC record; None for anything else
    (Annex B start codes, no extradata)."""
    if not extradata or len(extradata) < 7 or extradata[0] != 1:
        return None
    size = (extradata[4] & 0b11) + 1
    return size if size in (1, 2, 4) else None


def is_disposable(packet: bytes | memoryview, length_size: int) -> bool:
    """True when the packet holds at least one slice, no slice is a reference, and nothing
    else but delimiters and filler.

    A malformed packet (a length running past the end, a forbidden bit set, start codes
    where lengths belong) is not disposable: the decoder sees it and reports what is wrong."""
    data = memoryview(packet)
    if data.format != "B" or data.ndim != 1:
        data = data.cast("B")
    if bytes(data[:4]) == b"\x00\x00\x00\x01":
        # Annex B inside a length-prefixed stream (as a 4-byte length, 1: no slice is that
        # short). A 3-byte start code is also a valid length of 256-511 bytes: left to the
        # parse, which fails on what follows.
        return False
    position, end, slices = 0, len(data), 0
    while position < end:
        if position + length_size >= end:
            return False
        length = int.from_bytes(data[position : position + length_size], "big")
        position += length_size
        if length == 0 or position + length > end:
            return False
        header = data[position]
        kind, referenced = header & 0x1F, header & 0x60
        if header & 0x80:
            return False
        if kind == _NON_IDR_SLICE and not referenced:
            slices += 1
        elif kind not in _HARMLESS:
            return False
        position += length
    return slices > 0
