"""A scripted teleop driver for a car on a track of waypoints, and the teleop page it drives
through (pure: no simulator, no numpy).

- `TrackFollower`: privileged, it knows the track's centre line and the car's pose and speed;
  it wishes to steer towards a look-ahead point on the centre line and to go at a target speed
  that drops in curves (`Wish`: turn and throttle in [-1, 1]).
- `Lapses`: a person's lapses of attention, added to the follower's wish while recording: now
  and then, for a fraction of a second, the hands drift (a turn offset), the eyes miss the
  bend ahead (no braking) or the driver hesitates (a light brake); the follower then brings
  the car back. Recordings of a perfect driver never show a car off the line or too slow, so
  a policy that gets there has nothing to imitate.
- `TeleopLink`: what a person's teleop page does with a wish: it sends a `drive` command when
  the wish moved more than the deadband from the last command sent, otherwise re-sends the
  last command as a keepalive every 400 ms. The car executes the last command sent, never the
  wish (`TeleopLink.executed`, `car_action`).
- `KeyboardLink`: the same driver at a keyboard page (`sim.keyboard`): arrow up accelerates
  (0.4), arrow down brakes (-0.6), released the car coasts (0); left and right a fixed turn,
  tapped through bends. `LINKS` names both by driver.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from rovertrain.sim.choices import CONTINUOUS, KEYBOARD
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.keyboard import KeyboardPage, Keys

DEADBAND = 0.1
KEEPALIVE_MS = 400.0
DRIVE = "drive"
TRACK_HALF_WIDTH = 40 / 6
"""CarRacing's road, centre line to edge (gymnasium's `TRACK_WIDTH`), in world units."""


@dataclass(frozen=True)
class Wish:
    """The controls a driver wants (and a `drive` command's values): turn > 0 steers right,
    throttle > 0 is gas, < 0 brake; both in [-1, 1]."""

    turn: float
    throttle: float

    def values(self) -> dict[str, float]:
        return {"turn": self.turn, "throttle": self.throttle}


STANDSTILL = Wish(0.0, 0.0)


def clamp(value: float, low: float = -1.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def car_action(command: Wish) -> tuple[float, float, float]:
    """A `drive` command as a car's (steer, gas, brake)."""
    throttle = clamp(command.throttle)
    return clamp(command.turn), max(throttle, 0.0), max(-throttle, 0.0)


class TeleopLink:
    """The teleop page between a driver and the car (see the module docstring)."""

    def __init__(self, deadband: float = DEADBAND, keepalive_ms: float = KEEPALIVE_MS):
        self.deadband, self.keepalive_ms = deadband, keepalive_ms
        self.last: Wish | None = None
        self.last_t = -math.inf

    @property
    def executed(self) -> Wish:
        """What the car does now: the last command sent (standing still before the first)."""
        return STANDSTILL if self.last is None else self.last

    def offer(self, t_ms: float, wish: Wish) -> SentCommand | None:
        """The driver's wish at `t_ms`; returns the command the page sends now, if any."""
        wish = Wish(round(clamp(wish.turn), 2), round(clamp(wish.throttle), 2))
        last = self.last
        if last is None or self._moved(last, wish):
            send = wish
        elif t_ms - self.last_t >= self.keepalive_ms:
            send = last
        else:
            return None
        self.last, self.last_t = send, t_ms
        return SentCommand(round(t_ms, 1), DRIVE, send.values())

    def _moved(self, last: Wish, wish: Wish) -> bool:
        return (
            abs(wish.turn - last.turn) > self.deadband
            or abs(wish.throttle - last.throttle) > self.deadband
        )


CAR_KEYS = {"turn": Keys((-0.6, 0.6)), "throttle": Keys((-0.6, 0.4))}
"""A car's keyboard page: left/right, arrow down (brake) and up (accelerate); released: 0."""


class KeyboardLink:
    """A keyboard page between a driver and the car (see the module docstring)."""

    def __init__(self) -> None:
        self.page = KeyboardPage(CAR_KEYS)
        self.last: Wish | None = None

    @property
    def executed(self) -> Wish:
        return STANDSTILL if self.last is None else self.last

    def offer(self, t_ms: float, wish: Wish) -> SentCommand | None:
        values = self.page.offer(t_ms, {"turn": wish.turn, "throttle": wish.throttle})
        if values is None:
            return None
        self.last = Wish(values["turn"], values["throttle"])
        return SentCommand(round(t_ms, 1), DRIVE, self.last.values())


LINKS: dict[str, type[TeleopLink] | type[KeyboardLink]] = {
    CONTINUOUS: TeleopLink,
    KEYBOARD: KeyboardLink,
}
"""The page a driver sends through, by driver (`choices.DRIVERS`)."""


@dataclass(frozen=True)
class CarPose:
    """Where the car is: position, heading (radians; forward is (-sin, cos), as Box2D's
    CarRacing car) and speed (world units per second)."""

    x: float
    y: float
    angle: float
    speed: float


@dataclass(frozen=True)
class FollowerStyle:
    """The scripted driver's numbers (world units, seconds)."""

    lookahead: float = 12.0  # metres ahead at standstill
    lookahead_per_speed: float = 0.25  # plus this many seconds of travel
    steer_gain: float = 1.5  # turn per radian of bearing to the look-ahead point
    top_speed: float = 55.0
    curve_speed: float = 30.0  # at a bend of `sharp_bend` radians over the horizon
    sharp_bend: float = 1.2
    horizon: float = 40.0  # how far ahead bends slow it down
    throttle_gain: float = 0.04  # throttle per unit of speed error
    brake_limit: float = 0.6  # never brakes harder (a full brake locks the wheels)
    lift_in_turns: float = 0.7  # gas at most 1 - this x |turn| (full gas in a turn spins it)


def segment_distance(
    point: tuple[float, float], start: tuple[float, float], end: tuple[float, float]
) -> float:
    """The distance from `point` to the segment start-end."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = dx * dx + dy * dy
    along = (
        0.0 if length == 0 else ((point[0] - start[0]) * dx + (point[1] - start[1]) * dy) / length
    )
    along = max(0.0, min(1.0, along))
    return math.dist(point, (start[0] + along * dx, start[1] + along * dy))


def wrap(angle: float) -> float:
    """An angle in (-pi, pi]."""
    return math.atan2(math.sin(angle), math.cos(angle))


class TrackFollower:
    """Steers to a look-ahead point on a closed centre line (see the module docstring)."""

    def __init__(
        self, waypoints: Sequence[tuple[float, float]], style: FollowerStyle | None = None
    ):
        if len(waypoints) < 3:
            raise ValueError("a track needs at least 3 waypoints")
        self.points = list(waypoints)
        self.style = style or FollowerStyle()
        self.index = 0  # the waypoint the car is nearest, found near the previous one
        count = len(self.points)
        self.step_lengths = [
            math.dist(self.points[i], self.points[(i + 1) % count]) for i in range(count)
        ]

    def wish(self, car: CarPose, see_bends: bool = True) -> Wish:
        """What the driver wants now; `see_bends` False: it drives as if the road were
        straight ahead (a lapse of attention, `Lapses`)."""
        style = self.style
        self.index = self._nearest(car)
        lookahead = style.lookahead + style.lookahead_per_speed * car.speed
        target = self.points[self._ahead(self.index, lookahead)]
        forward = (-math.sin(car.angle), math.cos(car.angle))
        right = (math.cos(car.angle), math.sin(car.angle))
        dx, dy = target[0] - car.x, target[1] - car.y
        bearing = math.atan2(dx * right[0] + dy * right[1], dx * forward[0] + dy * forward[1])
        turn = clamp(style.steer_gain * bearing)
        bend = (
            min(1.0, self.bend_ahead(self.index, style.horizon) / style.sharp_bend)
            if see_bends
            else 0.0
        )
        target_speed = style.top_speed - (style.top_speed - style.curve_speed) * bend
        throttle = clamp(style.throttle_gain * (target_speed - car.speed), -style.brake_limit)
        throttle = min(throttle, 1.0 - style.lift_in_turns * abs(turn))
        return Wish(turn, throttle)

    def distance_from_centre(self, car: CarPose) -> float:
        """How far the car is from the centre line (world units; the road's half-width is
        `TRACK_HALF_WIDTH`), measured to the two segments beside its nearest waypoint."""
        self.index = self._nearest(car)
        count = len(self.points)
        here = self.points[self.index]
        return min(
            segment_distance((car.x, car.y), here, self.points[(self.index + step) % count])
            for step in (-1, 1)
        )

    def bend_ahead(self, index: int, distance: float) -> float:
        """How much the centre line turns (radians, the largest heading change from here)
        within `distance` ahead of waypoint `index`."""
        start = self._heading(index)
        largest, travelled, i = 0.0, 0.0, index
        while travelled < distance:
            travelled += self.step_lengths[i]
            i = (i + 1) % len(self.points)
            largest = max(largest, abs(wrap(self._heading(i) - start)))
        return largest

    def _heading(self, index: int) -> float:
        here, there = self.points[index], self.points[(index + 1) % len(self.points)]
        return math.atan2(there[1] - here[1], there[0] - here[0])

    def _ahead(self, index: int, distance: float) -> int:
        travelled, i = 0.0, index
        while travelled < distance:
            travelled += self.step_lengths[i]
            i = (i + 1) % len(self.points)
        return i

    def _nearest(self, car: CarPose, window: int = 30) -> int:
        count = len(self.points)
        candidates = [(self.index + k) % count for k in range(-5, window)]
        return min(candidates, key=lambda i: math.dist(self.points[i], (car.x, car.y)))


@dataclass(frozen=True)
class LapseStyle:
    """How often and how badly the recorded driver lapses (seconds, turn and throttle units)."""

    every: float = 4.0  # mean time between the starts of two lapses
    shortest: float = 0.3
    longest: float = 0.9
    drift: tuple[float, float] = (0.25, 0.6)  # |turn offset| of a drift
    shares: tuple[float, float, float] = (0.4, 0.3, 0.3)  # drift, missed bend, hesitation
    hesitation_brake: float = 0.3  # a hesitating driver brakes this much, twice as long


class Lapses:
    """A person's lapses of attention (see the module docstring); deterministic for a seed.

    Three kinds, each followed by the attentive driver bringing the car back: a drift (the
    hands add a turn offset), a missed bend (it aims at top speed as if the road ran
    straight: too fast into the bend) and a hesitation (it brakes lightly for twice as long:
    too slow, then full gas again)."""

    def __init__(self, seed: int, style: LapseStyle | None = None):
        self.random = random.Random(seed)
        self.style = style or LapseStyle()
        self.until = -math.inf
        self.offset, self.see_bends, self.hesitating = 0.0, True, False

    def wish(self, t_ms: float, step_ms: float, follower: TrackFollower, car: CarPose) -> Wish:
        """The follower's wish at `t_ms`, as a lapsing driver has it (called every step)."""
        style = self.style
        if t_ms >= self.until:
            self.offset, self.see_bends, self.hesitating = 0.0, True, False
            if self.random.random() < step_ms / (style.every * 1000.0):
                self._start(t_ms)
        wish = follower.wish(car, see_bends=self.see_bends)
        throttle = -style.hesitation_brake if self.hesitating else wish.throttle
        return Wish(clamp(wish.turn + self.offset), throttle)

    def _start(self, t_ms: float) -> None:
        style = self.style
        seconds = self.random.uniform(style.shortest, style.longest)
        kind = self.random.choices(("drift", "missed", "hesitation"), weights=style.shares)[0]
        if kind == "drift":
            self.offset = self.random.choice((-1, 1)) * self.random.uniform(*style.drift)
        elif kind == "missed":
            self.see_bends = False
        else:
            self.hesitating, seconds = True, 2 * seconds
        self.until = t_ms + 1000.0 * seconds
