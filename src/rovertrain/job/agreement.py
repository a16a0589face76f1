"""Stop, pause and budget agreed by every rank, so that all of them take the same steps.

A stop request (a signal to any rank or to the launcher, the budget, the pause limit) or a
pause reaches every rank at its next agreement: one small all-reduce per training step, and
about one a second while sessions are decoded. Only rank 0's events are written.
"""

from __future__ import annotations

from rovertrain.distributed.group import RankGroup
from rovertrain.job.control import JobControl

STOPPED_ELSEWHERE = "Stop requested on another rank"
DECODE_AGREEMENT_SECONDS = 1.0


class AgreedControl:
    """The training loop's control (TrainingControl) on a rank: the job's own control, with
    stop, pause and the budget clock made the same on every rank at each safe point."""

    def __init__(self, control: JobControl, group: RankGroup):
        self.control = control
        self.group = group
        self._elapsed = control.elapsed()

    @property
    def activity(self) -> str:
        return self.control.activity

    @activity.setter
    def activity(self, text: str) -> None:
        self.control.activity = text

    def safe_point(self) -> None:
        """Agree; while any rank is paused, every rank waits here (agreeing, so none times out)."""
        while True:
            stop, paused = self._agree()
            if paused and not stop:
                self.control.pause_began()
                self.control.clock.sleep(0.1)
                continue
            self.control.pause_ended()
            return

    def _agree(self) -> tuple[bool, bool]:
        local = self.control
        stop, paused, elapsed = self.group.all_max(
            [float(local.should_stop()), float(local.is_paused()), local.elapsed()]
        )
        self._elapsed = elapsed
        if stop and not local.stop_requested():
            local.request_stop(
                "Job time budget reached" if local.budget_reached() else STOPPED_ELSEWHERE
            )
        return bool(stop), bool(paused)

    def stop_requested(self) -> bool:
        return self.control.stop_requested()

    def elapsed(self) -> float:
        """The budget clock as of the last agreement: the slowest rank's, the same everywhere."""
        return self._elapsed

    def remaining(self) -> float:
        return self.control.max_seconds - self._elapsed


class DecodeAgreement:
    """The decoder pool's watcher on a rank decoding its shard (DecodeWatcher), then the
    wait for the other ranks' shards: stop and pause agreed about once a second."""

    def __init__(self, control: JobControl, group: RankGroup):
        self.control = control
        self.group = group
        self._last = control.clock.monotonic()
        self._stop = False
        self._paused = False

    def _agree(self, done: bool) -> bool:
        """One round; True when every rank has finished its shard."""
        local = self.control
        stop, paused, pending = self.group.all_max(
            [float(local.should_stop()), float(local.is_paused()), float(not done)]
        )
        self._last = self.control.clock.monotonic()
        self._stop, self._paused = bool(stop), bool(paused) and not stop
        if self._stop and not local.stop_requested():
            local.request_stop(
                "Job time budget reached" if local.budget_reached() else STOPPED_ELSEWHERE
            )
        return not pending

    def _due(self) -> None:
        if self.control.clock.monotonic() - self._last >= DECODE_AGREEMENT_SECONDS:
            self._agree(done=False)

    def should_stop(self) -> bool:
        self._due()
        return self._stop

    def poll_pause(self) -> bool:
        self._due()
        if self._paused:
            self.control.pause_began()
        else:
            self.control.pause_ended()
        return self._paused

    def show_decoding(self, decoding: dict[str, int]) -> None:
        self.control.show_decoding(decoding)

    def wait_for_all(self) -> None:
        """This rank's shard is done: keep agreeing until every rank's is (or a stop)."""
        while not self._agree(done=True):
            if self._paused:
                self.control.pause_began()
            self.control.clock.sleep(0.05)
        self.control.pause_ended()
