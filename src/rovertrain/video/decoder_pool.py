"""Decoder children: one spawned process per session, a deadline each, at most N at once.

A crash, a hang or an exception in FFmpeg costs one session, never the job. The job's
`threads` are shared out: one per child while sessions queue, all the free ones to a child
that starts with no session behind it (the common scheduled job: one new drive, the window
store for the rest), which the child hands to the codec's frame/slice threads.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess

from rovertrain.video.decode_protocol import (
    DecodeFailure,
    DecodeRequest,
    FramesDecoded,
    Outcome,
)


def codec_threads(threads: int, busy: int, waiting: int) -> int:
    """Threads for the next child: the job's free threads (`threads` minus those `busy` in
    running children), shared evenly between this session and the `waiting` ones that could
    start beside it. Never below one."""
    free = threads - busy
    starting = min(waiting + 1, max(1, free))
    return max(1, free // starting)


@dataclass
class _Child:
    session_id: str
    process: BaseProcess
    conn: Connection
    started: float
    threads: int
    paused_seconds: float = 0.0
    outcome: Outcome | None = None
    frames: int = 0


@dataclass
class DecoderPool:
    threads: int
    timeout_seconds: float
    should_stop: Callable[[], bool]
    is_paused: Callable[[], bool] = lambda: False
    on_tick: Callable[[dict[str, int]], None] = lambda active: None
    active: dict[int, _Child] = field(default_factory=dict)

    def run(self, requests: list[DecodeRequest]) -> Generator[tuple[str, Outcome], None, None]:
        """Yield (sessionId, outcome) as children finish. Stops early when asked to."""
        context = multiprocessing.get_context("spawn")
        pending = list(requests)
        try:
            while pending or self.active:
                if self.should_stop():
                    return
                self._hold_while_paused()
                while pending and self._busy_threads() < self.threads:
                    request = pending.pop(0)
                    share = codec_threads(self.threads, self._busy_threads(), len(pending))
                    self._start(
                        context, replace(request, limits=replace(request.limits, threads=share))
                    )
                yield from self._collect()
                self.on_tick({child.session_id: child.frames for child in self.active.values()})
        finally:
            self.stop_all()

    def _busy_threads(self) -> int:
        return sum(child.threads for child in self.active.values())

    def _start(self, context: SpawnContext, request: DecodeRequest) -> None:
        from rovertrain.video import decoder_child

        parent_conn, child_conn = context.Pipe(duplex=False)
        process = context.Process(
            target=decoder_child.main,
            args=(request, child_conn),
            name=f"rovertrain-decode-{request.session_id}",
            daemon=True,
        )
        process.start()
        child_conn.close()
        self.active[process.sentinel] = _Child(
            request.session_id, process, parent_conn, time.monotonic(), request.limits.threads
        )

    def _collect(self) -> Iterator[tuple[str, Outcome]]:
        handles: list[Connection | int] = []
        for child in self.active.values():
            handles.extend([child.process.sentinel, child.conn])
        ready = set(wait(handles, timeout=0.2))
        now = time.monotonic()
        for sentinel, child in list(self.active.items()):
            if child.conn in ready or sentinel in ready:
                self._drain(child)
            if sentinel in ready or (child.outcome is not None and not child.process.is_alive()):
                child.process.join(timeout=5)
                outcome = child.outcome or self._crash_outcome(child.process.exitcode)
                self._forget(sentinel)
                yield child.session_id, outcome
            elif now - child.started - child.paused_seconds > self.timeout_seconds:
                self._kill(child)
                self._forget(sentinel)
                reason = f"decoding took longer than {self.timeout_seconds:g} s and was stopped"
                yield child.session_id, DecodeFailure("decode_timeout", reason)

    @staticmethod
    def _drain(child: _Child) -> None:
        """Read progress reports and, once sent, the outcome; never block."""
        try:
            while child.outcome is None and child.conn.poll():
                message = child.conn.recv()
                if isinstance(message, FramesDecoded):
                    child.frames = message.count
                else:
                    child.outcome = message
        except (EOFError, OSError):
            pass

    @staticmethod
    def _crash_outcome(exitcode: int | None) -> Outcome:
        if exitcode is not None and exitcode < 0:
            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            return DecodeFailure("decoder_crashed", f"the decoder process crashed ({name})")
        return DecodeFailure("decoder_crashed", f"the decoder process exited with code {exitcode}")

    def _hold_while_paused(self) -> None:
        if not self.is_paused():
            return
        self._signal_all(signal.SIGSTOP)
        began = time.monotonic()
        try:
            while self.is_paused() and not self.should_stop():
                time.sleep(0.1)
        finally:
            self._signal_all(signal.SIGCONT)
            for child in self.active.values():
                child.paused_seconds += time.monotonic() - began

    def _signal_all(self, number: int) -> None:
        for child in self.active.values():
            with contextlib.suppress(OSError, TypeError):
                if child.process.pid:
                    os.kill(child.process.pid, number)

    @staticmethod
    def _kill(child: _Child) -> None:
        with contextlib.suppress(OSError, AttributeError):
            child.process.kill()
        child.process.join(timeout=5)

    def _forget(self, sentinel: int) -> None:
        child = self.active.pop(sentinel)
        with contextlib.suppress(OSError):
            child.conn.close()

    def stop_all(self) -> None:
        self._signal_all(signal.SIGCONT)
        for sentinel, child in list(self.active.items()):
            self._kill(child)
            self._forget(sentinel)
