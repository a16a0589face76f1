"""Live progress of `rovertrain run` on stderr for a person at a terminal (rich), fed by the
event stream.

`replay` and `import` follow one stream of work and say it on one line
(`protocol.progress.ProgressLine`); a job decodes several sessions at once while its budget
runs, so it gets a row per session being decoded, one for training and one for the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import TaskID


def _text(event: Mapping[str, object], key: str) -> str:
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _number(event: Mapping[str, object], key: str) -> float:
    value = event.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


class ProgressView:
    """An event listener: sessions decoded, training steps with loss and examples/s, budget."""

    def __init__(self, sessions: int, max_seconds: float):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.0f}"),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.sessions = self.progress.add_task("sessions", total=max(1, sessions), detail="")
        self.budget = self.progress.add_task("budget s", total=max_seconds, detail="")
        self.training: TaskID | None = None
        self.decoders: dict[str, TaskID] = {}
        self.progress.start()

    def show_decoding(self, decoding: dict[str, int]) -> None:
        """A bar per session being decoded, counting its frames."""
        for session_id in list(self.decoders):
            if session_id not in decoding:
                self.progress.remove_task(self.decoders.pop(session_id))
        for session_id, frames in decoding.items():
            if session_id not in self.decoders:
                self.decoders[session_id] = self.progress.add_task(
                    f"  {session_id}", total=None, detail="frames"
                )
            self.progress.update(self.decoders[session_id], completed=frames)

    def __call__(self, event: Mapping[str, object]) -> None:
        kind = event["kind"]
        if kind == "started":  # the job may have listed every session under the root
            self.progress.update(self.sessions, total=max(1, _number(event, "sessions")))
        if kind in ("dataset", "skipped"):
            note = "skipped" if kind == "skipped" else f"{_number(event, 'windows'):.0f} windows"
            self.progress.advance(self.sessions)
            self.progress.update(self.sessions, detail=f"{_text(event, 'sessionId')}: {note}")
        elif kind == "heartbeat":
            self.progress.update(self.sessions, detail=_text(event, "activity"))
        elif kind == "progress":
            if self.training is None:
                self.training = self.progress.add_task("training", total=None, detail="")
            loss, speed = _number(event, "loss"), _number(event, "examplesPerSecond")
            detail = f"loss {loss:.4f}  {speed:.0f} ex/s"
            self.progress.update(self.training, completed=_number(event, "steps"), detail=detail)
        if "elapsedSeconds" in event:
            elapsed, phase = _number(event, "elapsedSeconds"), _text(event, "phase")
            self.progress.update(self.budget, completed=elapsed, detail=phase)
        if kind == "phase" and _text(event, "phase") != "decode":
            self.show_decoding({})
        if kind in ("complete", "error"):
            self.progress.stop()
