"""Supervised driving: the policy drives, the human model watches and takes over when the
rover leaves a safety envelope, drives until it is safe again and hands back.

This is the field a policy meets on a real rover (HG-DAgger, Kelly et al. 2019): what the
person does right after a take-over is exactly the correction the recordings lacked. The
envelope (docs/simulator.md, "Supervised driving") is judged on the world as it is; the
person then drives as the recorded human model does (their reaction time, their rules).

- `breach`: which envelope condition the rover is outside of, if any (pure, a table).
- `ProgressWindow`: how far the policy drove in the last seconds it had nothing to wait for
  (the `crawl` condition's measure).
- `may_hand_back`: whether the person, having corrected the rover, hands it back (pure).
- `SupervisedDriver`: the controller. The policy is ticked every 100 ms throughout (its
  state keeps up with the drive, as on a rover whose loop keeps running while a person
  drives); its commands are sent, marked `by: policy`, only while it is engaged. Every
  command sent is fed back to the policy with who sent it, so a person's command while the
  policy is engaged disengages it (`RoverPolicy.observe_command`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from rovertrain.sim.drivers import (
    Camera,
    HumanDriver,
    SentCommand,
    TickPolicy,
    commands_from_decision,
)
from rovertrain.sim.world import METRES_PER_SPEED, REST_RANGE, World, within_rest_range

OFFSET, OBSTACLE, STALL, CRAWL = "offset", "obstacle", "stall", "crawl"
REASONS = (OFFSET, OBSTACLE, STALL, CRAWL)


@dataclass(frozen=True)
class Envelope:
    """Where a supervisor lets the policy drive (lengths in metres, offsets in lane
    half-widths: 1 is the lane's edge)."""

    max_offset: float = 1.0  # past the lane's edge, now or in `lookahead_ms` at this drift:
    lookahead_ms: float = 300.0  # take over as the rover leaves (a person sees it coming)
    obstacle_metres: float = 2.5  # moving with an obstacle this close ahead: stop it now
    stall_ms: float = 8_000.0  # at rest this long with nothing to stop for (a person's
    # own pauses last 3-6 s): drive on
    crawl_ms: float = 10_000.0  # driven this long with nothing to wait for, yet less than
    crawl_metres: float = 5.0  # this far (a stop-go stutter, a creep): drive on. The human
    # model's least in any such 10 s, over 600 rollouts of the three rover worlds: 7.4 m
    hand_back_offset: float = 0.3  # the person hands back once this close to the centre,
    hand_back_heading: float = 0.1  # heading along the lane,
    min_control_ms: float = 2_000.0  # having driven at least this long, moving, no obstacle

    def event_fields(self) -> dict[str, float]:
        return {
            "maxOffset": self.max_offset,
            "lookaheadMs": self.lookahead_ms,
            "obstacleMetres": self.obstacle_metres,
            "stallMs": self.stall_ms,
            "crawlMs": self.crawl_ms,
            "crawlMetres": self.crawl_metres,
            "handBackOffset": self.hand_back_offset,
            "handBackHeading": self.hand_back_heading,
            "minControlMs": self.min_control_ms,
        }


@dataclass(frozen=True)
class Seen:
    """What the supervisor sees of the rover at a tick. `offset`: lane half-widths from the
    centre; `drift`: the offset's rate (half-widths per second); `obstacle_ahead`: metres to
    the obstacle on the lane (None: none); `rest_ms`: how long the rover has been at rest;
    `progress`: metres driven over the last `crawl_ms` with nothing to wait for (None: the
    policy has not driven that long unobstructed)."""

    offset: float
    drift: float
    moving: bool
    obstacle_ahead: float | None
    rest_ms: float
    progress: float | None


def breach(seen: Seen, envelope: Envelope) -> str | None:
    """The first envelope condition broken, or None."""
    ahead = math.inf if seen.obstacle_ahead is None else seen.obstacle_ahead
    soon = seen.offset + seen.drift * envelope.lookahead_ms / 1000.0
    conditions = (
        (OFFSET, max(abs(seen.offset), abs(soon)) > envelope.max_offset),
        (OBSTACLE, seen.moving and ahead <= envelope.obstacle_metres),
        (STALL, not seen.moving and ahead > REST_RANGE and seen.rest_ms >= envelope.stall_ms),
        (CRAWL, seen.progress is not None and seen.progress < envelope.crawl_metres),
    )
    return next((reason for reason, broken in conditions if broken), None)


def may_hand_back(
    offset: float,
    heading: float,
    moving: bool,
    obstacle_ahead: float | None,
    control_ms: float,
    envelope: Envelope,
) -> bool:
    """The person hands the rover back: corrected (near the centre, heading along the lane),
    moving, nothing ahead, after driving at least `min_control_ms`."""
    return (
        control_ms >= envelope.min_control_ms
        and moving
        and obstacle_ahead is None
        and abs(offset) <= envelope.hand_back_offset
        and abs(heading) <= envelope.hand_back_heading
    )


class ProgressWindow:
    """The rover's position over the last `window_ms` of one unobstructed stretch.

    A stretch starts when the policy is handed the rover and again whenever an obstacle is
    within `REST_RANGE` ahead (stopping or slowing for it is the policy's job, not a crawl).
    `metres()` is the way driven over the last `window_ms`, None until the stretch is that
    long."""

    def __init__(self, window_ms: float):
        self.window_ms = window_ms
        self.samples: deque[tuple[float, float]] = deque()

    def restart(self) -> None:
        self.samples.clear()

    def note(self, t_ms: float, s: float) -> None:
        self.samples.append((t_ms, s))
        # Keep the newest sample at least `window_ms` old: the window's start.
        while len(self.samples) > 1 and t_ms - self.samples[1][0] >= self.window_ms:
            self.samples.popleft()

    def metres(self) -> float | None:
        if not self.samples:
            return None
        (first_t, first_s), (last_t, last_s) = self.samples[0], self.samples[-1]
        return last_s - first_s if last_t - first_t >= self.window_ms else None


@dataclass(frozen=True)
class Intervention:
    """A take-over (`reason` one of REASONS) or a hand-back (`reason` None), at `t_ms`."""

    t_ms: float
    reason: str | None


@dataclass
class SupervisionLog:
    """Who drove when: every take-over and hand-back (the figures come from the commands
    sent: `field_drive.rollout_field`)."""

    interventions: list[Intervention] = field(default_factory=list)

    @property
    def take_overs(self) -> list[Intervention]:
        return [event for event in self.interventions if event.reason is not None]

    def reasons(self) -> dict[str, int]:
        counts = dict.fromkeys(REASONS, 0)
        for event in self.take_overs:
            counts[str(event.reason)] += 1
        return counts


class SupervisedPolicy(TickPolicy, Protocol):
    """A policy that can be handed the rover (`rovertrain.runtime.RoverPolicy`)."""

    def engage(self) -> None: ...


class SupervisedDriver:
    """The policy drives under the human model's supervision (see the module docstring).

    `opening`: the operator's first command (a person's), after which the policy is engaged."""

    name = "supervised"

    def __init__(
        self,
        policy: SupervisedPolicy,
        human: HumanDriver,
        opening: SentCommand,
        envelope: Envelope | None = None,
    ):
        self.policy, self.human = policy, human
        self.envelope = envelope or Envelope()
        self.opening: SentCommand | None = opening
        self.log = SupervisionLog()
        self.human_drives = False
        self.control_since = 0.0
        self.rest_since: float | None = None
        self.progress = ProgressWindow(self.envelope.crawl_ms)
        self.next_tick = 0.0
        policy.reset()

    def act(self, t_ms: float, camera: Camera, world: World) -> list[SentCommand]:
        t = t_ms
        sent: list[SentCommand] = []
        if self.opening is not None:
            sent.append(self.opening)
            self.observe(self.opening)
            self.opening = None
            self.policy.engage()
        sent.extend(self.person(world, camera))
        if t >= self.next_tick:
            self.next_tick = t + self.policy.tick_ms
            decision = self.policy.tick(camera(), t)
            if not self.human_drives:
                decided = commands_from_decision(
                    t, self.policy.schema, decision.send, decision.values
                )
                for command in decided:
                    sent.append(command.from_policy())
                    self.observe(sent[-1])
        return sent

    def person(self, world: World, camera: Camera) -> list[SentCommand]:
        """The human model's part of a tick: watch, take over, drive, or hand back."""
        t, pose = world.t_ms, world.pose
        self.rest_since = (
            None if world.moving else (t if self.rest_since is None else self.rest_since)
        )
        ahead = world.obstacle_distance()
        if self.human_drives:
            control_ms = t - self.control_since
            if may_hand_back(pose.x, pose.heading, world.moving, ahead, control_ms, self.envelope):
                self.human_drives = False
                self.log.interventions.append(Intervention(t, None))
                self.policy.engage()
                self.progress.restart()
                self.human.watch(world)
                return []
            return self.observed(self.human.act(t, camera, world))
        rest_ms = 0.0 if self.rest_since is None else t - self.rest_since
        if within_rest_range(ahead):
            self.progress.restart()  # something to wait for: a new stretch after it
        else:
            self.progress.note(t, pose.s)
        drift = pose.heading * pose.speed * METRES_PER_SPEED  # as World.move moves x
        seen = Seen(pose.x, drift, world.moving, ahead, rest_ms, self.progress.metres())
        reason = breach(seen, self.envelope)
        if reason is None:
            self.human.watch(world)
            return []
        self.human_drives, self.control_since = True, t
        self.log.interventions.append(Intervention(t, reason))
        self.human.take_over()
        return self.observed(self.human.act(t, camera, world))

    def observed(self, commands: list[SentCommand]) -> list[SentCommand]:
        """The person's commands of one step, in time order: each carries its own few
        milliseconds of jitter, so a warning and a drive sent at the same step can come out
        of the driver in either order, and the runtime refuses a command time that goes
        backwards (a warehouse round stopped on one)."""
        ordered = sorted(commands, key=lambda command: command.t)
        for command in ordered:
            self.observe(command)
        return ordered

    def observe(self, command: SentCommand) -> None:
        self.policy.observe_command(command.t, command.type, command.values, by=command.by)


__all__ = [
    "REASONS",
    "Envelope",
    "Intervention",
    "ProgressWindow",
    "Seen",
    "SupervisedDriver",
    "SupervisionLog",
    "breach",
    "may_hand_back",
]
