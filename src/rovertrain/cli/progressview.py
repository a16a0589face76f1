"""Live progress on stderr for a person at a terminal (rich), fed by the event stream."""

from __future__ import annotations

from typing import Any


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
        self.training: Any = None
        self.decoders: dict[str, Any] = {}
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

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "started":  # the job may have listed every session under the root
            self.progress.update(self.sessions, total=max(1, event["sessions"]))
        if kind in ("dataset", "skipped"):
            note = "skipped" if kind == "skipped" else f"{event['windows']} windows"
            self.progress.advance(self.sessions)
            self.progress.update(self.sessions, detail=f"{event['sessionId']}: {note}")
        elif kind == "heartbeat":
            self.progress.update(self.sessions, detail=event.get("activity", ""))
        elif kind == "progress":
            if self.training is None:
                self.training = self.progress.add_task("training", total=None, detail="")
            detail = f"loss {event['loss']:.4f}  {event['examplesPerSecond']:.0f} ex/s"
            self.progress.update(self.training, completed=event["steps"], detail=detail)
        if "elapsedSeconds" in event:
            phase = event.get("phase", "")
            self.progress.update(self.budget, completed=event["elapsedSeconds"], detail=phase)
        if kind == "phase" and event["phase"] != "decode":
            self.show_decoding({})
        if kind in ("complete", "error"):
            self.progress.stop()
