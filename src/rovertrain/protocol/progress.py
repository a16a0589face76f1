"""Live progress for a person at a terminal: one self-rewriting line on stderr.

`replay`, `import` and `run` each say their own words through the same `ProgressLine`: it is
silent when off (stderr is no terminal, or --no-progress), redraws at most every
`every_seconds` so a fast loop does not spend its time writing, pads over the previous text
so no stale characters remain, and turns itself off when stderr went away instead of failing
the command it reports on.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressLine:
    """`ready()` says whether a redraw is due; `show(text)` redraws; `clear()` erases the
    line (before other output), `end()` keeps it and moves below it."""

    def __init__(
        self,
        enabled: bool,
        stream: TextIO | None = None,
        *,
        every_seconds: float = 0.25,
        first_after_seconds: float = 0.0,
    ):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.every = every_seconds
        self.due = time.monotonic() + first_after_seconds
        self.width = 0  # characters of the text on the line now (0: nothing shown)

    def ready(self, *, force: bool = False) -> bool:
        """On, and the last redraw is `every_seconds` old (or `force`)."""
        return self.enabled and (force or time.monotonic() >= self.due)

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        self.due = time.monotonic() + self.every
        self._write("\r" + text.ljust(self.width))
        self.width = len(text)

    def clear(self) -> None:
        if self.enabled and self.width:
            self._write("\r" + " " * self.width + "\r")
        self.width = 0

    def end(self) -> None:
        if self.enabled and self.width:
            self._write("\n")
        self.width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: progress is not worth failing
            self.enabled = False
