"""What an import says: an `imported` event per session, `skipped` for what it could not use,
one terminal `complete`, and (on a terminal) a progress line on stderr."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TextIO

from rovertrain.protocol.events import EventStream
from rovertrain.protocol.progress import ProgressLine


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
    bag: dict[str, object] = field(default_factory=dict)
    """ROS bags: the topics and clocks used (docs/importing.md)."""

    def event_fields(self) -> dict[str, object]:
        """The `imported` event's fields."""
        fields: dict[str, object] = {
            "source": self.source,
            "sessionId": self.session_id,
            "frames": self.frames,
            "commands": self.commands,
            "dropped": self.dropped,
            "path": self.path,
            "dryRun": self.dry_run,
            "existing": self.existing,
        }
        if self.video:
            fields["video"] = self.video
        if self.bag:
            fields["bag"] = self.bag
        return fields

    def console_text(self) -> str:
        verb = "exists" if self.existing else ("would write" if self.dry_run else "wrote")
        dropped = ", ".join(f"{count} {reason}" for reason, count in self.dropped.items())
        return f"{verb} {self.session_id}: {self.frames} frames, {self.commands} commands" + (
            f" (dropped: {dropped})" if dropped else ""
        )


@dataclass(frozen=True)
class Rejected:
    source: str
    session_id: str
    code: str
    """A skip code of docs/recording-format.md."""
    reason: str


class Progress:
    """The frames of the session being imported, on one self-rewriting stderr line (only on a
    terminal); cleared before each session's outcome is printed."""

    def __init__(self, enabled: bool, stream: TextIO | None = None, every_seconds: float = 0.25):
        self.line = ProgressLine(enabled, stream, every_seconds=every_seconds)

    def show(self, label: str, frames: int, total: int | None, force: bool = False) -> None:
        if self.line.ready(force=force):  # called per frame: format only what is shown
            count = f"{frames}/{total}" if total else f"{frames}"
            self.line.show(f"importing {label}: {count} frames")

    def done(self) -> None:
        self.line.clear()


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
        self.stream.emit("imported", **item.event_fields())
        console_line(item.console_text())

    def skipped(self, item: Rejected) -> None:
        from rovertrain.protocol.console import console_line

        self.progress.done()
        self.rejected[item.session_id] = f"{item.code}: {item.reason}"
        self.stream.emit(
            "skipped",
            sessionId=item.session_id,
            code=item.code,
            reason=item.reason,
            source=item.source,
        )
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
