"""Where a job's time comes from: a clock it is handed, the real one unless told otherwise.

Everything whose behaviour depends on time passing (budget, pause limit, stop grace,
heartbeats) reads `monotonic()` and waits with `sleep()` on a `Clock` it was given, so that a
caller can hand it another one (tests hand it a clock they advance by hand). Wall-clock
timestamps written into events and manifests are records, not behaviour, and stay on
`time.time()`.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going backwards."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass on this clock (a polling wait: short, and may return early)."""
        ...


class SystemClock:
    """The real clock: `time.monotonic` and `time.sleep`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()
