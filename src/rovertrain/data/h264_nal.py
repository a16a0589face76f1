"""Which H.264 packets no other picture needs (pure: bytes in, answers out).

A picture whose slices all carry nal_ref_idc 0 is never used as a reference, so a decoder
that is not fed its packet decodes every other picture exactly as before (FFmpeg's own
`skip_frame=nonref` rests on the same rule). Only the length-prefixed layout of MP4 and
Matroska (avcC) is read; anything this parser does not understand counts as needed.
"""

from __future__ import annotations

# NAL unit types 1-5 carry slices; the others (SEI, parameter sets, delimiters) do not decide.
_SLICE_TYPES = range(1, 6)


def avcc_length_size(extradata: bytes | None) -> int | None:
    """Bytes in each NAL unit's length prefix, from an avcC record; None for anything else
    (Annex B start codes, no extradata)."""
    if not extradata or len(extradata) < 7 or extradata[0] != 1:
        return None
    size = (extradata[4] & 0b11) + 1
    return size if size in (1, 2, 4) else None


def is_disposable(packet: bytes | memoryview, length_size: int) -> bool:
    """True when the packet holds at least one slice and no slice is a reference.

    A malformed packet (a length running past the end, a forbidden bit set) is not
    disposable: the decoder sees it and reports whatever is wrong with it."""
    data = memoryview(packet)
    if data.format != "B" or data.ndim != 1:
        data = data.cast("B")
    position, end, slices = 0, len(data), 0
    while position < end:
        if position + length_size >= end:
            return False
        length = int.from_bytes(data[position : position + length_size], "big")
        position += length_size
        if length == 0 or position + length > end:
            return False
        header = data[position]
        if header & 0x80:
            return False
        if header & 0x1F in _SLICE_TYPES:
            if header & 0x60:
                return False
            slices += 1
        position += length
    return slices > 0
