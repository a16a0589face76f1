"""Which sessions train and which are held out; in what order they are processed. Pure."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from enum import StrEnum


class Partition(StrEnum):
    TRAINING = "training"
    HELD_OUT = "heldOut"


def is_held_out(session_id: str) -> bool:
    """A whole session is held out iff the first 8 hex digits of its sha256 are 0 mod 5.

    Stable across jobs, so neighbouring windows never straddle training and held-out.
    """
    return int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16) % 5 == 0


def processing_order(sessions: Sequence[str], seed: int) -> list[str]:
    """Training sessions first, held-out last, each group in an order shuffled by `seed`."""
    ordered = list(sessions)
    random.Random(seed).shuffle(ordered)
    ordered.sort(key=is_held_out)
    return ordered


def partition_of(session_id: str) -> Partition:
    return Partition.HELD_OUT if is_held_out(session_id) else Partition.TRAINING
