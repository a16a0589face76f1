"""A clock that moves only when a test moves it (rovertrain.contracts.clock.Clock).

`advance(seconds)` moves it; `sleep(seconds)` (what product code calls while it waits) moves it
too, so a wait loop lets time pass without any real waiting. `at(when, action)` runs an action
once the clock reaches `when`: what another thread or a signal would have done meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable


class FakeClock:
    def __init__(self, start: float = 1000.0, max_sleeps: int = 100_000) -> None:
        self.now = start
        self.slept: list[float] = []
        self._due: list[tuple[float, Callable[[], object]]] = []
        self._max_sleeps = max_sleeps

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        # A loop that never ends on a fake clock would hang the test: fail it instead.
        assert len(self.slept) < self._max_sleeps, (
            f"slept {len(self.slept)} times: a wait never ends"
        )
        self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "a monotonic clock never goes back"
        self.now += seconds
        due = [entry for entry in self._due if entry[0] <= self.now]
        self._due = [entry for entry in self._due if entry[0] > self.now]
        for _, action in sorted(due, key=lambda entry: entry[0]):
            action()

    def at(self, when: float, action: Callable[[], object]) -> None:
        self._due.append((when, action))

    def after(self, seconds: float, action: Callable[[], object]) -> None:
        self.at(self.now + seconds, action)
