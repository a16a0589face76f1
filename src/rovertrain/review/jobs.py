"""A job's curves from its event log, read from a byte offset so a live job's page only
fetches what was added since its last look."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from rovertrain.contracts.json_types import JsonObject

# What the job page draws: losses (progress), held-out figures (evaluation) against the gate
# (started), and how the job ended.
CURVE_KINDS = frozenset(
    {"started", "phase", "progress", "evaluation", "published", "complete", "error"}
)
MAX_READ_BYTES = 8 * 2**20  # per request: a long log arrives over a few polls


@dataclass(frozen=True)
class LogChunk:
    events: list[JsonObject]
    next_offset: int  # where the next read starts: after the last whole line
    size: int  # the log's size when read


def read_chunk(path: Path, offset: int) -> LogChunk:
    """The whole lines of the log from `offset` on (a line still being written waits for
    the next read), kept to the kinds the page draws."""
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        offset = min(max(0, offset), size)
        stream.seek(offset)
        data = stream.read(MAX_READ_BYTES)
    end = data.rfind(b"\n") + 1
    events: list[JsonObject] = []
    for line in data[:end].splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn or foreign line: the job page shows what it can
        if isinstance(event, dict) and event.get("kind") in CURVE_KINDS:
            events.append(event)
    return LogChunk(events, offset + end, size)
