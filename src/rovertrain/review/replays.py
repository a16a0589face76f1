"""A chosen model's decisions on a session: `rovertrain replay` run once, its events kept.

The replay runs as its own process (torch or onnxruntime, a few seconds per minute of
drive), so the page never waits on it and a crash in it cannot take the server down; its
events go to a `.part` file renamed into place when it finished cleanly, so a replay log
the page reads is always whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from rovertrain.protocol.eventlog import read_events
from rovertrain.review.refusal import Refusal
from rovertrain.review.timeline import Decision, decisions_of
from rovertrain.store.layout import Layout


@dataclass(frozen=True)
class ReplayState:
    state: str  # "none", "running", "done", "failed"
    decisions: list[Decision]
    error: str | None = None


class Replays:
    """The replays of one root: started on request, one at a time per (model, session)."""

    def __init__(self, root: Path):
        self.root = root
        self._running: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self._failed: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def log_path(self, model_id: str, session_id: str) -> Path:
        return Layout(self.root).review_replay(model_id, session_id)

    def start(self, model_id: str, session_id: str) -> None:
        """Starts the replay unless it runs or is done (ids checked by the caller)."""
        key = (model_id, session_id)
        with self._lock:
            if key in self._running or self.log_path(*key).is_file():
                return
            self._failed.pop(key, None)
            final = self.log_path(*key)
            final.parent.mkdir(parents=True, exist_ok=True)
            inside = Path(os.path.realpath(self.root)) / "training"
            if not Path(os.path.realpath(final.parent)).is_relative_to(inside):
                message = f"{final.parent} leads out of the root (a symbolic link)"
                raise Refusal(400, "unsafe_path", message)
            part = final.with_suffix(".part")
            checkpoint = Layout(self.root).checkpoint(model_id)
            command = [sys.executable, "-m", "rovertrain", "replay", str(checkpoint)]
            command += [str(self.root), session_id, "--threads", "1", "--no-progress"]
            with open(part, "wb") as out, open(final.with_suffix(".log"), "wb") as err:
                process = subprocess.Popen(command, stdout=out, stderr=err, env=_env())
            self._running[key] = process
        threading.Thread(target=self._finish, args=(key, process), daemon=True).start()

    def _finish(self, key: tuple[str, str], process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        final = self.log_path(*key)
        part, log = final.with_suffix(".part"), final.with_suffix(".log")
        with self._lock:
            del self._running[key]
            if code == 0:
                os.replace(part, final)
            else:
                self._failed[key] = _last_line(log) or f"replay exited with code {code}"
                part.unlink(missing_ok=True)

    def state(self, model_id: str, session_id: str) -> ReplayState:
        key = (model_id, session_id)
        with self._lock:
            if key in self._running:
                return ReplayState("running", [])
            if key in self._failed:
                return ReplayState("failed", [], self._failed[key])
        path = self.log_path(*key)
        if not path.is_file():
            return ReplayState("none", [])
        return ReplayState("done", decisions_of(read_events(path)))

    def stop_all(self) -> None:
        with self._lock:
            running = list(self._running.values())
        for process in running:
            process.terminate()


def _env() -> dict[str, str]:
    # One thread: the replay must not take the cores of a job training beside it.
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def _last_line(path: Path) -> str | None:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return None
    return lines[-1][-500:] if lines else None
