"""The simulated world: track geometry, the rover's physics, obstacles, and the camera.

A `World` advances in 10 ms ticks. Each tick: `begin_tick()` (scheduled events: an obstacle
appears ahead, a cleared one is taken away), the controller's commands go to `apply`, then
`move(STEP_MS)` and `end_tick(STEP_MS)`. `step(commands, dt_ms)` bundles that for a caller
that only wants the next camera frame. A moving rover stops by itself when no movement
command came for `COMMAND_TIMEOUT_MS` (a teleop link's keepalive exists for this). Lateral positions are in lane half-widths: 0 is the
centre line, ±1 the lane (or aisle) edge.

Randomness: obstacle timing draws from `events_rng`, the camera's lighting from `light_rng`.
Recordings pass one generator for both (and for the driver), the order in which the original
synth drew its numbers, so the same seed writes the same data; closed-loop rollouts pass
separate ones, so every controller meets the same world for a seed whatever it renders.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from rovertrain.sim.choices import Drift

STEP_MS = 10
LANE_HALF_WIDTH = 1.0
MAX_OFFSET = 1.6
"""The rover cannot leave further than this (kerb, shelf)."""
MAX_HEADING = 0.6
METRES_PER_SPEED = 4.0
"""Forward speed in m/s at a drive speed of 1."""

OBSTACLE_AHEAD = 16.0
"""An obstacle appears this far ahead of the rover, on the centre line."""
MEET_DISTANCE = 5.0
"""An obstacle counts as met once the rover has come this close (it had to react)."""
REST_RANGE = 6.0
"""Coming to rest at most this far before an obstacle counts as stopping for it."""
COMMAND_TIMEOUT_MS = 1000.0
"""A moving rover stops when no movement command came for this long (twice the teleop
keepalive: the link is gone, or the driver stopped driving)."""
CONTACT_DISTANCE = 0.5
CONTACT_HALF_WIDTH = 0.5
"""Reaching the obstacle with |offset| below this is a collision; above it, passing beside."""


def within_rest_range(ahead: float | None) -> bool:
    """An obstacle `ahead` metres on (None: none) is close enough to come to rest for."""
    return ahead is not None and 0.0 <= ahead <= REST_RANGE


class Track(Protocol):
    def curvature(self, s: float) -> float:
        """Curvature of the centre line at distance `s` (turn units: what `turn` must match)."""
        ...


@dataclass(frozen=True)
class RoadTrack:
    """A country road: three superposed sines, always bending a little."""

    phases: tuple[float, float, float]

    def curvature(self, s: float) -> float:
        a, b, c = self.phases
        return (
            0.55 * math.sin(s / 9.0 + a)
            + 0.3 * math.sin(s / 4.3 + b)
            + 0.15 * math.sin(s / 2.1 + c)
        )


@dataclass(frozen=True)
class AisleTrack:
    """Warehouse aisles: straight runs joined by short, tight corners (constant curvature)."""

    starts: tuple[float, ...]
    curvatures: tuple[float, ...]

    def curvature(self, s: float) -> float:
        index = bisect.bisect_right(self.starts, s) - 1
        return self.curvatures[index] if index >= 0 else 0.0

    @classmethod
    def generate(cls, rng: random.Random, length: float = 2000.0) -> AisleTrack:
        starts: list[float] = [0.0]
        curvatures: list[float] = [0.0]
        s = rng.uniform(10.0, 20.0)
        while s < length:
            bend = rng.choice((-1.0, 1.0)) * rng.uniform(0.55, 0.8)
            starts.append(s)
            curvatures.append(bend)
            s += rng.uniform(2.5, 4.5)
            starts.append(s)
            curvatures.append(0.0)
            s += rng.uniform(12.0, 26.0)
        return cls(tuple(starts), tuple(curvatures))


@dataclass(frozen=True)
class GentleTrack:
    """A long corridor that bends gently and evenly, one way then the other (a sine)."""

    amplitude: float
    wavelength: float  # metres per radian of the sine
    phase: float

    def curvature(self, s: float) -> float:
        return self.amplitude * math.sin(s / self.wavelength + self.phase)


@dataclass(frozen=True)
class ObstacleRules:
    """When obstacles appear: the first after `first_ms`, then every `gap_ms` (uniform range)
    while the rover moves; a stopped-for obstacle is taken away after `clear_ms`."""

    gap_ms: tuple[float, float]
    clear_ms: tuple[float, float] = (2_000.0, 3_500.0)


@dataclass
class Obstacle:
    """One obstacle on the centre line and what became of it."""

    at: float
    appeared_ms: float
    met: bool = False
    rested_ms: float | None = None  # when the rover came to rest in front of it
    rest_distance: float | None = None  # how far ahead it was when the rover first stood
    clear_at: float | None = None
    outcome: str | None = None  # "stopped", "collided", "passed"


@dataclass
class Bystander:
    """Someone beside the lane (warehouse worker) whom the driver warns with the `other`
    command when close."""

    at: float
    side: float
    warned: bool = False


@dataclass
class Pose:
    s: float = 0.0  # distance along the track
    x: float = 0.0  # lateral offset in lane half-widths
    heading: float = 0.0  # relative to the track
    speed: float = 0.0  # drive speed, 0..1
    turn: float = 0.0  # -1..1


class Renderer(Protocol):
    def frame(self, world: World) -> np.ndarray: ...


@dataclass
class World:
    """The steppable simulator: one world seed, one rover."""

    track: Track
    rules: ObstacleRules
    renderer: Renderer
    roles: Mapping[str, str]
    next_obstacle_ms: float
    events_rng: random.Random
    light_rng: random.Random
    light_range: tuple[float, float] = (0.75, 1.25)
    light: float = 1.0
    bystander_gap: tuple[float, float] | None = None
    pull: float = 0.0  # the rover turns this much by itself (a worn wheel, a sloping floor)
    t_ms: float = 0.0
    pose: Pose = field(default_factory=Pose)
    obstacle: Obstacle | None = None
    obstacles: list[Obstacle] = field(default_factory=list)
    bystanders: list[Bystander] = field(default_factory=list)
    signals: list[tuple[float, str]] = field(default_factory=list)
    next_bystander_s: float = math.inf
    last_movement_ms: float = -math.inf

    def __post_init__(self) -> None:
        if self.bystander_gap is not None:
            self.next_bystander_s = self.events_rng.uniform(*self.bystander_gap)

    @property
    def moving(self) -> bool:
        return self.pose.speed > 0.0

    def obstacle_distance(self) -> float | None:
        return None if self.obstacle is None else self.obstacle.at - self.pose.s

    def park(self, drift: Drift | None) -> None:
        """The rover placed where a start parks it (`choices.drift_of`; None: where the world
        starts it, on the centre line)."""
        if drift is not None:
            self.pose.x, self.pose.heading = drift.offset, drift.heading

    def begin_tick(self) -> None:
        """Scheduled events at the current time: a cleared obstacle goes, a new one appears."""
        if self.t_ms >= self.next_obstacle_ms and self.obstacle is None and self.moving:
            self.obstacle = Obstacle(self.pose.s + OBSTACLE_AHEAD, self.t_ms)
            self.obstacles.append(self.obstacle)
            self.next_obstacle_ms = self.t_ms + self.events_rng.uniform(*self.rules.gap_ms)
        obstacle = self.obstacle
        if (
            obstacle is not None
            and obstacle.clear_at is not None
            and self.t_ms >= obstacle.clear_at
        ):
            obstacle.outcome = "stopped"
            self.obstacle = None
        if self.moving and self.t_ms - self.last_movement_ms > COMMAND_TIMEOUT_MS:
            self.pose.speed, self.pose.turn = 0.0, 0.0
            self._note_rest()

    def apply(self, command_type: str, values: Mapping[str, float] | None = None) -> None:
        """What the rover does with a command, by the command's role."""
        role = self.roles.get(command_type, "other")
        pose = self.pose
        if role == "stop":
            pose.speed, pose.turn = 0.0, 0.0
        elif role == "movement":
            self.last_movement_ms = self.t_ms
            values = values or {}
            pose.speed = min(1.0, max(0.0, float(values.get("speed", 0.0))))
            pose.turn = min(1.0, max(-1.0, float(values.get("turn", 0.0))))
        else:
            self.signals.append((self.t_ms, command_type))
            self._warn_bystanders()
            return
        self._note_rest()

    def _note_rest(self) -> None:
        """Coming to rest close before an obstacle: it will be taken away."""
        obstacle = self.obstacle
        if obstacle is None or self.moving:
            return
        ahead = obstacle.at - self.pose.s
        if obstacle.rest_distance is None and ahead >= 0.0:
            obstacle.rest_distance = ahead
        if obstacle.clear_at is None and within_rest_range(ahead):
            obstacle.rested_ms = self.t_ms
            obstacle.clear_at = self.t_ms + self.events_rng.uniform(*self.rules.clear_ms)

    def _warn_bystanders(self) -> None:
        for bystander in self.bystanders:
            if not bystander.warned and 0.0 <= bystander.at - self.pose.s <= BYSTANDER_RANGE:
                bystander.warned = True

    def move(self, dt_ms: float) -> None:
        """Physics for dt_ms: the rover advances, turns relative to the track, and may meet,
        hit or pass the obstacle."""
        pose = self.pose
        dt = dt_ms / 1000.0
        pose.s += pose.speed * METRES_PER_SPEED * dt
        steer = (pose.turn + self.pull - self.track.curvature(pose.s)) * 0.8 * dt * (pose.speed > 0)
        pose.heading = max(-MAX_HEADING, min(MAX_HEADING, pose.heading + steer))
        pose.x = max(
            -MAX_OFFSET, min(MAX_OFFSET, pose.x + pose.heading * pose.speed * METRES_PER_SPEED * dt)
        )
        obstacle = self.obstacle
        if obstacle is not None:
            distance = obstacle.at - pose.s
            obstacle.met = obstacle.met or distance <= MEET_DISTANCE
            if distance <= CONTACT_DISTANCE and abs(pose.x) < CONTACT_HALF_WIDTH:
                obstacle.outcome = "collided"
                self.obstacle = None
            elif distance < -CONTACT_DISTANCE:
                obstacle.outcome = "passed"
                self.obstacle = None
        if self.bystander_gap is not None and pose.s + BYSTANDER_AHEAD >= self.next_bystander_s:
            side = self.events_rng.choice((-1.0, 1.0))
            self.bystanders.append(Bystander(self.next_bystander_s, side))
            self.next_bystander_s += self.events_rng.uniform(*self.bystander_gap)

    def end_tick(self, dt_ms: float = STEP_MS) -> None:
        self.t_ms += dt_ms

    def render(self) -> np.ndarray:
        """The camera frame now (RGB uint8); the lighting drifts a little from frame to frame."""
        low, high = self.light_range
        self.light = max(low, min(high, self.light + self.light_rng.gauss(0, 0.01)))
        return self.renderer.frame(self)

    def visible_bystanders(self) -> Iterable[Bystander]:
        s = self.pose.s
        return (b for b in self.bystanders if -1.0 < b.at - s < BYSTANDER_AHEAD)

    def step(
        self, commands: Sequence[tuple[str, Mapping[str, float] | None]], dt_ms: float
    ) -> np.ndarray:
        """Apply `commands` now, advance dt_ms in 10 ms ticks, return the camera frame."""
        for command_type, values in commands:
            self.apply(command_type, values)
        for _ in range(max(1, round(dt_ms / STEP_MS))):
            self.move(STEP_MS)
            self.end_tick(STEP_MS)
            self.begin_tick()
        return self.render()


BYSTANDER_AHEAD = 30.0
"""Bystanders are placed (and drawn) this far ahead."""
BYSTANDER_RANGE = 8.0
"""A warning within this distance before a bystander counts for them."""
