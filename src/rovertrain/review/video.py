"""A recording's video, served from a descriptor opened without following links.

A job refuses a video that is a symbolic link (data/recording.py `regular_file`); checking
the path and then opening it by name again would let a link swapped in between through, so
the file is opened once, with O_NOFOLLOW, checked on the descriptor, and served from it. The
browser seeks by asking for byte ranges (HTTP Range), so a long drive is never sent whole.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from aiohttp import web

from rovertrain.contracts.errors import SkipSession
from rovertrain.data.recording import open_regular
from rovertrain.review.refusal import Refusal

CHUNK_BYTES = 256 * 1024
MAX_VIDEO_BYTES = 2**63 - 1  # served in ranges: any size a job would read is fine here
RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def open_video(path: Path) -> tuple[int, int]:
    """(descriptor, size) of a regular file, never through a link (the recordings' opener)."""
    try:
        stream = open_regular(path, MAX_VIDEO_BYTES)
    except SkipSession as refused:
        raise Refusal(400, refused.code, f"the video: {refused.reason}") from None
    fd = os.dup(stream.fileno())
    stream.close()
    return fd, os.fstat(fd).st_size


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive (first, last) byte a Range header asks for; None: the whole file (no
    header, or one this server does not serve: several ranges). ValueError: none of the file."""
    if not header:
        return None
    found = RANGE.fullmatch(header.strip())
    if found is None:
        return None
    first, last = found.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        count = int(last)
        if count == 0 or size == 0:
            raise ValueError("an empty suffix")
        return max(0, size - count), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or end < start:
        raise ValueError("outside the file")
    return start, end


async def serve_video(request: web.Request, path: Path, content_type: str) -> web.StreamResponse:
    fd, size = await asyncio.to_thread(open_video, path)
    try:
        try:
            wanted = byte_range(request.headers.get("Range"), size)
        except ValueError:
            headers = {"Content-Range": f"bytes */{size}"}
            return web.Response(status=416, headers=headers)
        first, last = wanted if wanted is not None else (0, size - 1)
        headers = {"Content-Type": content_type, "Accept-Ranges": "bytes"}
        headers["Content-Length"] = str(max(0, last - first + 1))
        if wanted is not None:
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        response = web.StreamResponse(status=206 if wanted else 200, headers=headers)
        await response.prepare(request)
        position = first
        while request.method != "HEAD" and position <= last:
            count = min(CHUNK_BYTES, last - position + 1)
            data = await asyncio.to_thread(os.pread, fd, count, position)
            if not data:
                break  # the file shrank while served: the client sees a short body
            await response.write(data)
            position += len(data)
        await response.write_eof()
        return response
    finally:
        os.close(fd)
