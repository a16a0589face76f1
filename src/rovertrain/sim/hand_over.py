"""The hand-over, one concept for every world: how a rollout starts before the controller under
test drives, and the two controllers that take a start (`Copycat`, `PolicyDriver`).

`drive` reports every controller from each start it is asked for (`STARTS`, named in
`sim.choices`; `DEFAULT_STARTS` unless told), the same for every world:

- `handOver`: the world's person (the human model, CarRacing's scripted driver) drives the
  first `HAND_OVER_MS`, then hands the moving rover over, as an operator engages a policy
  while driving.
- `rest`: the rover parked, the policy engaged, nothing sent yet: the controller drives from
  t=0. A policy that only ever saw a moving rover must still get going.
- `drifted` (on request, `drive --start`): as `rest`, the rover parked past its lane's edge,
  its nose turned out (`choices.Drift`; the world places it): a state no person drove into.
  The human drives each seed from there too, as that start's reference.

A `Start` is the value: who leads until when, and an opening command sent at the hand-over
(`drive --supervised` opens its field rollouts with the person's first command). While the
lead drives, the controller watches: a policy ticks in the shadow on the frames (as a rover's
loop ticks while a person drives, so it has its previous frame when it takes over) and
observes every command sent. At the hand-over the opening, if any, goes out first (the rover
executes it, the policy observes it); then the controller decides.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

import numpy as np

from rovertrain.contracts.observation import BLIND_GREY
from rovertrain.sim.choices import DRIFTED, HAND_OVER, HAND_OVER_MS, REST, STARTS
from rovertrain.sim.drivers import (
    KEEPALIVE_MS,
    Camera,
    Controller,
    SentCommand,
    StateT,
    TickPolicy,
    commands_from_decision,
)
from rovertrain.sim.render import HEIGHT, WIDTH


@dataclass(frozen=True)
class Start(Generic[StateT]):
    """How one rollout starts (see the module docstring). `lead`: who drives before
    `hand_over_ms` (None: nobody); `opening`: the command sent at the hand-over, before the
    controller's first decision (None: none). A lead is a controller with its own state: a
    start is made for one rollout."""

    hand_over_ms: float = 0.0
    lead: Controller[StateT] | None = None
    opening: SentCommand | None = None


AT_REST: Start[object] = Start()
"""A start from rest: nothing sent yet."""


def start_named(name: str, person: Controller[StateT]) -> Start[StateT]:
    """Start `name` (`STARTS`) of a rollout whose person is `person` (a fresh controller that
    drives this rollout's world). A drifted start is a start from rest where the world parked
    the rover (`choices.drift_of`)."""
    if name not in STARTS:
        raise ValueError(f"unknown start {name!r}; known: {', '.join(STARTS)}")
    return Start(HAND_OVER_MS, lead=person) if name == HAND_OVER else Start()


HUMAN = "human"
"""The world's person as a controller: it drives from rest, its own start."""


def taken_at(controller: str, start: str) -> str:
    """The start a controller's rollout is reported under: the human drives from rest, or
    from where a drifted start parks the rover (nobody hands it over, and from the centre
    line it would answer another question)."""
    if controller == HUMAN and start != DRIFTED:
        return REST
    return start


@dataclass(frozen=True)
class PlannedRollouts:
    """One controller's rollouts of a drive: the start it takes the rover at, and whether it
    is the first start's (the one `drive --out` films)."""

    controller: str
    start: str
    first: bool


def rollout_plan(starts: Sequence[str], controllers: Sequence[str]) -> list[PlannedRollouts]:
    """Every controller from every start, start by start, in `controllers`' order; the human
    once from each place it starts (`taken_at`: from rest for the hand-over and rest, from
    the drifted pose): its rollout is those starts' reference."""
    plan: list[PlannedRollouts] = []
    for index, start in enumerate(starts):
        for name in controllers:
            taken = taken_at(name, start)
            if name == HUMAN and any(p.controller == HUMAN and p.start == taken for p in plan):
                continue
            plan.append(PlannedRollouts(name, taken, index == 0))
    return plan


def reference_start(start: str) -> str:
    """The start of the human rollouts that are `start`'s reference."""
    return taken_at(HUMAN, start)


class HandedOver(ABC, Generic[StateT]):
    """A controller that takes the rover at its start's hand-over; `watch`, `observe` and
    `drive` say what it does (`Copycat`, `PolicyDriver`)."""

    name: str

    def __init__(self, start: Start[StateT]):
        self.start = start
        self.opening = start.opening

    def act(self, t_ms: float, camera: Camera, state: StateT) -> list[SentCommand]:
        lead = self.start.lead
        if lead is not None and t_ms < self.start.hand_over_ms:
            self.watch(t_ms, camera)
            sent = lead.act(t_ms, camera, state)
            for command in sent:
                self.observe(command)
            return sent
        handed: list[SentCommand] = []
        if self.opening is not None:
            handed, self.opening = [self.opening], None
            self.observe(handed[0])
        return handed + self.drive(t_ms, camera, handed)

    def watch(self, t_ms: float, camera: Camera) -> None:
        """A tick before the hand-over."""

    def observe(self, command: SentCommand) -> None:
        """A command sent before or at the hand-over (the lead's, the opening)."""

    @abstractmethod
    def drive(
        self, t_ms: float, camera: Camera, handed: Sequence[SentCommand]
    ) -> list[SentCommand]:
        """A tick from the hand-over on; `handed`: the opening, sent at this tick."""


class Copycat(HandedOver[StateT]):
    """Repeats the last command sent every keepalive from the hand-over on: what a model that
    copies the command history does when it drives itself. An opening counts as its first."""

    name = "copycat"

    def __init__(self, start: Start[StateT], keepalive_ms: float = KEEPALIVE_MS):
        super().__init__(start)
        self.keepalive_ms = keepalive_ms
        self.last: SentCommand | None = None
        self.next_at = 0.0

    def observe(self, command: SentCommand) -> None:
        self.last = command

    def drive(
        self, t_ms: float, camera: Camera, handed: Sequence[SentCommand]
    ) -> list[SentCommand]:
        if handed:
            self.next_at = t_ms + self.keepalive_ms
            return []
        if t_ms < self.next_at or self.last is None:
            return []
        self.next_at = t_ms + self.keepalive_ms
        self.last = SentCommand(t_ms, self.last.type, self.last.values)
        return [self.last]


class PolicyDriver(HandedOver[StateT]):
    """A policy with the `RoverPolicy` interface, ticked every `tick_ms` with the camera frame
    (a grey one of `frame_size` when blind); it sends what the decision's `send` says (the
    event head's fires, the steering re-sends and a start), and every command sent is fed back with
    `observe_command`, exactly as on a rover."""

    def __init__(
        self,
        policy: TickPolicy,
        start: Start[StateT],
        blind: bool = False,
        frame_size: tuple[int, int] = (HEIGHT, WIDTH),
    ):
        super().__init__(start)
        self.policy = policy
        self.name = "blind" if blind else "policy"
        self.grey = np.full((*frame_size, 3), BLIND_GREY, np.uint8) if blind else None
        self.next_tick = 0.0
        policy.reset()

    def observe(self, command: SentCommand) -> None:
        self.policy.observe_command(command.t, command.type, command.values)

    def watch(self, t_ms: float, camera: Camera) -> None:
        self.tick(t_ms, camera)  # in the shadow: nothing is sent

    def tick(self, t_ms: float, camera: Camera) -> list[SentCommand] | None:
        """What the policy decides at `t_ms`, or None between its ticks."""
        if t_ms < self.next_tick:
            return None
        self.next_tick = t_ms + self.policy.tick_ms
        decision = self.policy.tick(camera() if self.grey is None else self.grey, t_ms)
        return commands_from_decision(t_ms, self.policy.schema, decision.send, decision.values)

    def drive(
        self, t_ms: float, camera: Camera, handed: Sequence[SentCommand]
    ) -> list[SentCommand]:
        sent = self.tick(t_ms, camera) or []
        for command in sent:
            self.observe(command)
        return sent
