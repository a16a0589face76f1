"""What an import says: an `imported` event per session, `skipped` for what it could not use,
one terminal `complete`, and (on a terminal) a progress line on stderr."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from rovertrain.protocol.events import EventStream


@dataclass(frozen=True)
class Imported:
    source: str
    session_id: str
    frames: int
    commands: int
    dropped: dict[str, int]
    path: str
    dry_run: bool
    existing: bool
    """The recording was already there (an earlier import): nothing was written."""
    video: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Rejected:
    source: str
    session_id: str
    code: str
    """A skip code of docs/recording-format.md."""
    reason: str


class Progress:
    """One self-rewriting stderr line while frames are imported (only on a terminal)."""

    def __init__(self, enabled: bool, stream: TextIO | None = None, every_seconds: float = 0.25):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.every = every_seconds
        self.shown = 0.0
        self.width = 0

    def show(self, label: str, frames: int, total: int | None, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.shown < self.every:
            return
        self.shown = now
        count = f"{frames}/{total}" if total else f"{frames}"
        text = f"importing {label}: {count} frames"
        try:
            self.stream.write("\r" + text.ljust(self.width))
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
        self.width = len(text)

    def done(self) -> None:
        if self.enabled and self.width:
            try:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.width = 0


class ImportRun:
    """Collects the outcome of one `rovertrain import` and turns it into events."""

    def __init__(self, stream: EventStream, progress: Progress, dry_run: bool):
        self.stream = stream
        self.progress = progress
        self.dry_run = dry_run
        self.started = time.monotonic()
        self.accepted: list[str] = []
        self.rejected: dict[str, str] = {}
        self.written = 0
        self.existing = 0
        self.frames = 0

    def imported(self, item: Imported) -> None:
        from rovertrain.protocol.console import console_line

        self.progress.done()
        self.accepted.append(item.session_id)
        self.frames += item.frames
        if item.existing:
            self.existing += 1
        elif not item.dry_run:
            self.written += 1
        fields: dict[str, object] = {
            "source": item.source,
            "sessionId": item.session_id,
            "frames": item.frames,
            "commands": item.commands,
            "dropped": item.dropped,
            "path": item.path,
            "dryRun": item.dry_run,
            "existing": item.existing,
        }
        if item.video:
            fields["video"] = item.video
        self.stream.emit("imported", **fields)
        verb = "exists" if item.existing else ("would write" if item.dry_run else "wrote")
        dropped = ", ".join(f"{count} {reason}" for reason, count in item.dropped.items())
        console_line(
            f"{verb} {item.session_id}: {item.frames} frames, {item.commands} commands"
            + (f" (dropped: {dropped})" if dropped else "")
        )

    def skipped(self, item: Rejected) -> None:
        from rovertrain.protocol.console import console_line

        self.progress.done()
        self.rejected[item.session_id] = f"{item.code}: {item.reason}"
        self.stream.emit(
            "skipped", sessionId=item.session_id, code=item.code, reason=item.reason,
            source=item.source,
        )  # fmt: skip
        console_line(f"skipped {item.source}: {item.reason} ({item.code})")

    def finish(self, source: str) -> None:
        self.progress.done()
        self.stream.emit(
            "complete",
            trained=False,
            accepted=self.accepted,
            rejected=self.rejected,
            reason=f"imported from {source}",
            imports={
                "source": source,
                "sessions": len(self.accepted),
                "written": self.written,
                "existing": self.existing,
                "skipped": len(self.rejected),
                "frames": self.frames,
                "dryRun": self.dry_run,
            },
            elapsedSeconds=round(time.monotonic() - self.started, 3),
        )
