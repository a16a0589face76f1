"""A person at a keyboard teleop page and the taps that follow a wish between its levels; pure
(no simulator, no numpy).

A keyboard page gives each value a few keys, each sending one fixed level while it is held;
with no key held the value is at its rest level (arrow up: cruise, released: stand; left or
right: a fixed turn, released: straight). The page sends a command when a key goes down or
up, and repeats it every `repeat_ms` while a key is held (the browser's key repeat, as pages
throttle it); with every key released it sends nothing more.

A person who wants a value between two levels (a gentle bend) taps: holds the key a while,
releases it a while, so that the level held over time follows the wish (`Finger`: a
sigma-delta modulator with a person's shortest press and release). Recordings of such a
driver hold only the page's levels, never the value a continuous driver would have sent: the
class of data a squared-error value head averages into a value nobody sends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

REPEAT_MS = 250.0
"""While a key is held the page re-sends its command this often."""
SHORTEST_PRESS_MS = 150.0
"""A person holds a key, or leaves it released, at least this long."""


@dataclass(frozen=True)
class Keys:
    """One value on a keyboard page: the levels its keys send, and its rest level."""

    levels: tuple[float, ...]
    rest: float = 0.0

    def all(self) -> tuple[float, ...]:
        """Every level the value takes, rest included, in increasing order."""
        return tuple(sorted({*self.levels, self.rest}))


def bracket(levels: tuple[float, ...], wish: float) -> tuple[float, float]:
    """The levels just below and just above `wish` (the same level twice on a level, the end
    level beyond the ends)."""
    wish = min(max(wish, levels[0]), levels[-1])
    below = max(level for level in levels if level <= wish)
    above = min(level for level in levels if level >= wish)
    return below, above


class Finger:
    """A person's finger on the keys of one value: the level held at each moment so that the
    level held over time follows the wish (see the module docstring). `owed` integrates the
    wish minus the level held; between two levels the finger holds the upper one while more is
    owed, the lower one otherwise, each for at least `shortest_ms`."""

    def __init__(self, keys: Keys, shortest_ms: float = SHORTEST_PRESS_MS):
        self.levels, self.shortest_ms = keys.all(), shortest_ms
        self.held = keys.rest
        self.since = -math.inf
        self.owed = 0.0
        self.last_t: float | None = None

    def press(self, t_ms: float, wish: float) -> float:
        """The level held at `t_ms` (called in increasing time) for `wish`."""
        if self.last_t is not None:
            self.owed += (wish - self.held) * (t_ms - self.last_t)
        self.last_t = t_ms
        if t_ms - self.since < self.shortest_ms:
            return self.held
        below, above = bracket(self.levels, wish)
        if self.held in (below, above):
            target = above if self.owed > 0 else below
        else:  # the wish moved past another level: start over from the nearer one
            target = below if wish - below <= above - wish else above
            self.owed = 0.0
        if target != self.held:
            self.held, self.since = target, t_ms
        return self.held

    def release(self, t_ms: float, rest: float) -> None:
        """Every key let go (the person stops or pauses)."""
        self.held, self.since, self.owed, self.last_t = rest, t_ms, 0.0, t_ms


class KeyboardPage:
    """The page between a person and the rover: `offer` takes the person's wish per value and
    returns the values the page sends now, if any (see the module docstring)."""

    def __init__(self, keys: Mapping[str, Keys], repeat_ms: float = REPEAT_MS):
        self.keys, self.repeat_ms = dict(keys), repeat_ms
        self.fingers = {name: Finger(value_keys) for name, value_keys in keys.items()}
        self.sent: dict[str, float] | None = None
        self.sent_t = -math.inf

    def at_rest(self, values: Mapping[str, float]) -> bool:
        return all(values[name] == keys.rest for name, keys in self.keys.items())

    def offer(self, t_ms: float, wish: Mapping[str, float]) -> dict[str, float] | None:
        held = {name: finger.press(t_ms, wish[name]) for name, finger in self.fingers.items()}
        repeat = not self.at_rest(held) and t_ms - self.sent_t >= self.repeat_ms
        if held == self.sent and not repeat:
            return None
        self.sent, self.sent_t = held, t_ms
        return dict(held)

    def forget(self) -> None:
        """The next `offer` sends whatever is held (a person takes over the rover)."""
        self.sent = None

    def release(self, t_ms: float) -> dict[str, float]:
        """Every key let go: the rest levels, which the page sends (the caller sends them, or
        another key's command in their place, as the stop key does)."""
        for name, finger in self.fingers.items():
            finger.release(t_ms, self.keys[name].rest)
        self.sent = {name: keys.rest for name, keys in self.keys.items()}
        self.sent_t = t_ms
        return dict(self.sent)
