"""What the job and a decoder child say to each other (pickled over a pipe)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DecodeLimits:
    max_bytes: int
    max_pixels: int
    max_seconds: float
    threads: int


@dataclass(frozen=True)
class DecodeRequest:
    """Decode one session's video into a window store entry."""

    session_id: str
    video_path: Path
    offset_ms: float
    frames_path: Path
    meta_path: Path
    name: str
    key: str
    limits: DecodeLimits
    nice: int = 0


@dataclass(frozen=True)
class FramesDecoded:
    """Progress: frames decoded so far."""

    count: int


@dataclass(frozen=True)
class DecodeDone:
    """The store entry is written."""


@dataclass(frozen=True)
class DecodeFailure:
    """The session cannot be used; `code` is a stable skip code."""

    code: str
    reason: str


Outcome = DecodeDone | DecodeFailure
