"""Signals, budget, pause and the watchdog of one job.

Signal handlers only set flags; the job stops at its next safe point. The watchdog thread
guarantees an end even when the main thread is stuck in a C call: it reads signal numbers from
the wakeup fd (written at C level, whatever Python is doing) and, on a second stop signal, on
the hard deadline, or when a stop request is not honoured within the grace, writes the terminal
event and ends the process.

Time is read from the job's clock, the one its event stream was given (the real one unless
told otherwise), never from `time` directly: everything here that depends on time passing can
be driven by a clock advanced by hand.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable
from enum import StrEnum
from types import FrameType, TracebackType

from rovertrain.contracts.clock import Clock
from rovertrain.contracts.errors import ErrorCode
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.protocol.events import EventStream

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def ignore_stop_signals() -> None:
    """For a job process whose outcome is decided and written: a stop signal from now on has
    nothing to stop. Ignored rather than left to `JobControl`'s flag-only handler, because the
    interpreter puts the default action back for Python handlers while it finalizes, and a
    SIGTERM then killed a job that had completed (its supervisor saw `complete`, then a
    signal instead of exit code 0)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


class Phase(StrEnum):
    START = "start"
    DECODE = "decode"
    TRAIN = "train"
    EVALUATE = "evaluate"
    PUBLISH = "publish"


class JobControl:
    def __init__(
        self,
        stream: EventStream,
        max_seconds: float,
        grace: float,
        max_paused: float,
        heartbeat_seconds: float = 15.0,
    ):
        self.stream = stream
        # One job, one clock, its stream's: heartbeats compare it with `stream.last_emit`.
        self.clock: Clock = stream.clock
        self.heartbeat_seconds = heartbeat_seconds
        self.max_seconds = max_seconds
        self.grace = grace
        self.max_paused = max_paused
        self.started = self.clock.monotonic()
        self.stop_reason: str | None = None
        self.stop_requested_at: float | None = None
        self.pause_requested = False
        self.paused_since: float | None = None
        self.paused_total = 0.0
        self.phase = Phase.START
        self.activity = ""
        self.details: dict[str, dict[str, int]] = {}
        self.finished = threading.Event()
        self.decoding_watchers: list[Callable[[dict[str, int]], None]] = []
        self._previous: dict[int, signal._HANDLER] = {}
        self._wakeup_read = -1
        self._wakeup_write = -1
        self._previous_wakeup = -1
        self._watchdog: threading.Thread | None = None
        self._stop_signals_seen = 0

    # -- budget --------------------------------------------------------------------------
    def elapsed(self) -> float:
        """Seconds of the budget used: wall time minus time spent paused."""
        now = self.clock.monotonic()
        paused, paused_since = self.paused_total, self.paused_since
        if paused_since is not None:
            paused += now - paused_since
        return now - self.started - paused

    def remaining(self) -> float:
        return self.max_seconds - self.elapsed()

    def budget_reached(self) -> bool:
        return self.elapsed() >= self.max_seconds

    def should_stop(self) -> bool:
        return self.stop_requested() or self.budget_reached()

    def stop_requested(self) -> bool:
        """A signal, a vanished reader or the pause limit asked the job to stop."""
        return self.stop_reason is not None

    def stop_label(self) -> str | None:
        if self.stop_reason:
            return self.stop_reason
        return "Job time budget reached" if self.budget_reached() else None

    def request_stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_requested_at = self.clock.monotonic()

    # -- pause ---------------------------------------------------------------------------
    def is_paused(self) -> bool:
        self._check_pause_limit()
        return self.pause_requested and self.stop_reason is None

    def _check_pause_limit(self) -> None:
        paused_since = self.paused_since
        if paused_since is not None and self.clock.monotonic() - paused_since > self.max_paused:
            self.request_stop("Paused longer than maxPausedSeconds")

    def safe_point(self) -> None:
        """Honour a pause request here: emit `paused`, wait, emit `resumed`."""
        if not self.is_paused():
            return
        self.pause_began()
        while self.is_paused():
            self.clock.sleep(0.05)
        self.pause_ended()

    def poll_pause(self) -> bool:
        """For loops that keep running while paused (the decoder pool stops its children)."""
        paused = self.is_paused()
        if paused:
            self.pause_began()
        else:
            self.pause_ended()
        return paused

    def show_decoding(self, decoding: dict[str, int]) -> None:
        """Which sessions are being decoded, with frames so far (heartbeats and watchers)."""
        self.activity = ", ".join(f"decoding {sid}: {n} frames" for sid, n in decoding.items())
        self.details = {"decoding": decoding}
        for watcher in self.decoding_watchers:
            watcher(decoding)

    def pause_began(self) -> None:
        if self.paused_since is None:
            self.paused_since = self.clock.monotonic()
            self.stream.emit("paused", phase=self.phase, elapsedSeconds=round(self.elapsed(), 3))

    def pause_ended(self) -> None:
        if self.paused_since is not None:
            paused_for = self.clock.monotonic() - self.paused_since
            self.paused_total += paused_for
            self.paused_since = None
            self.stream.emit(
                "resumed",
                phase=self.phase,
                pausedSeconds=round(paused_for, 3),
                elapsedSeconds=round(self.elapsed(), 3),
            )

    # -- signals -------------------------------------------------------------------------
    def install(self) -> None:
        for number in STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._on_stop_signal)
        self._previous[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, self._on_pause)
        self._previous[signal.SIGCONT] = signal.signal(signal.SIGCONT, self._on_continue)
        # Exceeding RLIMIT_FSIZE must be an EFBIG error we can report, not a silent death.
        self._previous[signal.SIGXFSZ] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self._wakeup_read, self._wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous_wakeup = signal.set_wakeup_fd(self._wakeup_write, warn_on_full_buffer=False)
        self._watchdog = threading.Thread(
            target=self._watch, name="rovertrain-watchdog", daemon=True
        )
        self._watchdog.start()

    def uninstall(self) -> None:
        self.finished.set()
        signal.set_wakeup_fd(self._previous_wakeup)
        for number, handler in self._previous.items():
            # A late stop signal while the process winds down must not kill it with the
            # default action after the terminal event: keep the flag-only handlers for those.
            if number not in STOP_SIGNALS:
                signal.signal(number, handler)
        if self._watchdog is not None:
            self._watchdog.join(timeout=2)
        for fd in (self._wakeup_read, self._wakeup_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> JobControl:
        self.install()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.uninstall()

    def _on_stop_signal(self, number: int, _frame: FrameType | None) -> None:
        self.request_stop(f"Stopped by {signal.Signals(number).name}")

    def _on_pause(self, _number: int, _frame: FrameType | None) -> None:
        self.pause_requested = True

    def _on_continue(self, _number: int, _frame: FrameType | None) -> None:
        self.pause_requested = False

    def _watch(self) -> None:
        while not self.finished.is_set():
            with contextlib.suppress(OSError, ValueError):
                ready, _, _ = select.select([self._wakeup_read], [], [], 0.2)
                if ready:
                    for byte in os.read(self._wakeup_read, 64):
                        if byte in STOP_SIGNALS:
                            self._stop_signals_seen += 1
                            self.request_stop(f"Stopped by {signal.Signals(byte).name}")
                        elif byte == signal.SIGTSTP:
                            self.pause_requested = True
                        elif byte == signal.SIGCONT:
                            self.pause_requested = False
            if self.finished.is_set():
                return
            self._check_pause_limit()
            self.heartbeat()
            overdue = self.overdue()
            if overdue is not None:
                self._force_exit(*overdue)

    def overdue(self) -> tuple[ErrorCode, str] | None:
        """Why the watchdog must end the process now (code, message), or None."""
        if self._stop_signals_seen >= 2:
            return ErrorCode.INTERRUPTED, "Stopped at once by a second stop signal."
        if self.elapsed() > self.max_seconds + self.grace:
            return (
                ErrorCode.DEADLINE_EXCEEDED,
                f"The job ran past maxJobSeconds plus the {self.grace:g} s grace and was ended.",
            )
        requested_at = self.stop_requested_at
        if requested_at is not None and self.clock.monotonic() - requested_at > self.grace:
            return (
                ErrorCode.STOP_TIMEOUT,
                f"The job did not stop within {self.grace:g} s of the request and was ended.",
            )
        return None

    def enter(self, phase: Phase) -> None:
        self.phase = phase
        self.activity = ""
        self.details = {}
        self.stream.emit("phase", phase=phase, elapsedSeconds=round(self.elapsed(), 3))

    def heartbeat(self) -> bool:
        """Emit a heartbeat when no event was written for `heartbeat_seconds`; True if one was."""
        if self.clock.monotonic() - self.stream.last_emit < self.heartbeat_seconds:
            return False
        if self.stream.terminal_written or not self.stream.acquire(timeout=0.5):
            return False
        try:
            if self.stream.terminal_written:
                return False
            self.stream.emit(
                "heartbeat",
                phase=self.phase,
                elapsedSeconds=round(self.elapsed(), 3),
                activity=self.activity,
                paused=self.paused_since is not None,
                **self.details,
            )
            return True
        finally:
            self.stream.release()

    def _force_exit(self, code: ErrorCode, message: str) -> None:
        if self.stream.acquire(timeout=2.0):
            try:
                if not self.stream.terminal_written:
                    self.stream.emit("error", code=code, message=message, phase=self.phase)
            finally:
                self.stream.release()
        exit_code = ExitCode.SUPERVISOR_GONE if self.stream.reader_gone else ExitCode.FAILED
        os._exit(int(exit_code))
