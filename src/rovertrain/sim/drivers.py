"""Controllers: who sends the commands. Each is asked once per tick, `act(t_ms, camera, state)`,
and returns the commands it sends now; the rollout applies them to the world.

- `HumanDriver`: the recorded human model. It sees the world `reaction_ms` late and with
  noise, sends `drive` when its controls change beyond a deadband and as a keepalive about
  every 500 ms while moving, repeats `stop` while an obstacle blocks the way, sometimes idles,
  and (where the world has bystanders) warns them with the world's `other` command.
- `TickPolicy`: what a policy driver needs of a policy (`rovertrain.runtime.RoverPolicy`'s
  interface); `commands_from_decision`: what a rover sends for one of its decisions.

The copycat and the policy driver take the rover at a hand-over (`sim.hand_over`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from rovertrain.contracts.command_schema import HUMAN, POLICY, Schema, Slot
from rovertrain.data.recording import CommandLine
from rovertrain.sim.keyboard import KeyboardPage, Keys
from rovertrain.sim.world import World

Camera = Callable[[], np.ndarray]
KEEPALIVE_MS = 500
KEYBOARD_PAGE = "keyboard-page"
"""The `controlProfile` of a session the keyboard driver recorded (`keyboard_page`)."""


@dataclass(frozen=True)
class SentCommand:
    t: float  # ms on the command clock, as recorded
    type: str
    values: dict[str, float] | None = None
    by: str = HUMAN  # who sent it: a person or a policy (`by` in the command log)

    def record(self) -> CommandLine:
        """The command log line (key order as the recording format's examples); `by` only for
        a policy's command (a line without it is a person's)."""
        item: CommandLine = {"t": self.t, "type": self.type}
        if self.values is not None:
            item["values"] = self.values
        if self.by != HUMAN:
            item["by"] = self.by
        return item

    def from_policy(self) -> SentCommand:
        return SentCommand(self.t, self.type, self.values, POLICY)


StateT = TypeVar("StateT", contravariant=True)


class Controller(Protocol[StateT]):
    """One controller family for every world: at a tick (`t_ms`) a controller decides from
    what a rover has: its camera (`camera()`: the frame, rendered on demand) and the commands
    it sent itself. A privileged driver (the scripted human model) reads the world's state
    too, through `state` (a rover world's `World`, CarRacing's `CarPose`); the others
    ignore it (they are `Controller[object]`: they drive any world)."""

    name: str

    def act(self, t_ms: float, camera: Camera, state: StateT) -> list[SentCommand]: ...


@dataclass(frozen=True)
class DriverStyle:
    """How a human drives in one world (the same rules, other numbers)."""

    lookahead: float = 3.0
    stop_distance: float = 4.0
    cruise: float = 0.75
    slow_in_bends: float = 0.3
    keyboard_speed: float = 0.6
    key_turn: float = 1.0  # a keyboard page's left/right level: a full turn
    idle_every_ms: tuple[float, float] = (40_000.0, 70_000.0)
    idle_for_ms: tuple[float, float] = (3_000.0, 6_000.0)
    warn_type: str | None = None
    warn_distance: float = 7.0
    centring: float = 0.8  # turn per lane half-width off centre
    heading_gain: float = 1.2  # turn per radian of heading off the lane's
    steer_noise: float = 0.03  # a hand's unsteadiness (standard deviation of the turn)


class HumanDriver:
    """The human-like driver the recordings are made with (see the module docstring)."""

    name = "human"

    def __init__(
        self,
        rng: random.Random,
        profile: str,
        reaction_ms: float,
        first_idle_ms: float,
        keepalive_ms: float,
        style: DriverStyle,
        page: KeyboardPage | None = None,
    ):
        self.rng, self.profile, self.style = rng, profile, style
        self.page = page  # a keyboard page (`keyboard_page`); None: a gamepad's sticks
        self.reaction_ms = reaction_ms
        self.next_idle = first_idle_ms
        self.keepalive = keepalive_ms
        self.history: list[tuple[float, float, float, float | None]] = []
        self.obstacle_seen: float | None = None  # the obstacle as of the previous tick
        self.last_drive = -math.inf
        self.last_stop = -math.inf
        self.sent_turn, self.sent_speed = 0.0, 0.0
        self.moving = False
        self.stopped_for_obstacle = False
        self.idle_until = -math.inf
        self.warned: set[float] = set()

    def watch(self, world: World) -> tuple[float, float, float, float | None]:
        """What the eyes saw reaction_ms ago (x, heading, s, the obstacle's position); an
        obstacle registers one tick after it appears. Called once per tick, also while a
        policy drives and this person only watches (supervision)."""
        pose = world.pose
        self.history.append((pose.x, pose.heading, pose.s, self.obstacle_seen))
        self.obstacle_seen = None if world.obstacle is None else world.obstacle.at
        lag = min(len(self.history) - 1, int(self.reaction_ms / 10))
        seen = self.history[-1 - lag]
        if len(self.history) > 100:
            del self.history[:50]
        return seen

    def take_over(self) -> None:
        """Supervision: from the next `act` this person drives a rover a policy drove: the
        first command goes out at once, and no idle pause comes while they correct it."""
        self.moving = False
        self.stopped_for_obstacle = False
        self.idle_until = -math.inf
        self.next_idle = math.inf
        if self.page is not None:
            self.page.forget()

    def act(self, t_ms: float, camera: Camera, world: World) -> list[SentCommand]:
        t, rng, style = t_ms, self.rng, self.style
        sent: list[SentCommand] = []

        def send(kind: str, values: dict[str, float] | None = None) -> None:
            sent.append(SentCommand(round(t + rng.uniform(0, 4), 1), kind, values))

        seen_x, seen_heading, seen_s, seen_obstacle = self.watch(world)
        blocked = seen_obstacle is not None and seen_obstacle - seen_s < style.stop_distance
        if t >= self.next_idle and self.moving and world.obstacle is None:
            self.idle_until = t + rng.uniform(*style.idle_for_ms)
            self.next_idle = t + rng.uniform(*style.idle_every_ms)
            send("drive", {"speed": 0.0, "turn": 0.0})
            self.sent_speed, self.sent_turn, self.moving = 0.0, 0.0, False
            self.last_drive = t
            if self.page is not None:
                self.page.release(t)
        if style.warn_type is not None:
            for bystander in world.bystanders:
                ahead = bystander.at - seen_s
                if bystander.at not in self.warned and 0.0 <= ahead < style.warn_distance:
                    self.warned.add(bystander.at)
                    send(style.warn_type)
        if blocked:
            repeat_ms = self.keepalive if self.page is None else self.page.repeat_ms
            if not self.stopped_for_obstacle or t - self.last_stop >= repeat_ms:
                if self.page is not None and not self.stopped_for_obstacle:
                    self.page.release(t)  # the arrows let go, the stop key held
                send("stop")
                self.last_stop = t
                self.stopped_for_obstacle = True
                self.moving = False
        elif t >= self.idle_until:
            self.stopped_for_obstacle = False
            bend = world.track.curvature(seen_s + style.lookahead)
            turn = (
                bend * 0.9
                - style.centring * seen_x
                - style.heading_gain * seen_heading
                + rng.gauss(0, style.steer_noise)
            )
            speed = style.cruise - style.slow_in_bends * abs(bend)
            if self.page is not None:
                self.press_keys(t, turn, send)
                return sent
            if self.profile == "keyboard":
                # Arrow keys: half or full turn; a key changes only on a clear need.
                if abs(turn - self.sent_turn) > 0.4:
                    sent_key = round(max(-1.0, min(1.0, turn)) * 2) / 2
                else:
                    sent_key = self.sent_turn
                turn, speed = sent_key, style.keyboard_speed
            turn = round(max(-1.0, min(1.0, turn)), 2)
            speed = round(speed, 2)
            changed = abs(turn - self.sent_turn) > 0.15 or abs(speed - self.sent_speed) > 0.1
            if not self.moving or changed or t - self.last_drive >= self.keepalive:
                send("drive", {"speed": speed, "turn": turn})
                self.sent_speed, self.sent_turn, self.moving = speed, turn, True
                self.last_drive = t
                self.keepalive = KEEPALIVE_MS + rng.uniform(-10, 10)
        return sent

    def press_keys(self, t: float, turn: float, send: Callable[..., None]) -> None:
        """A keyboard page: the arrow up held, left or right tapped to follow the turn."""
        assert self.page is not None
        values = self.page.offer(t, {"speed": self.style.keyboard_speed, "turn": turn})
        if values is None:
            return
        send("drive", values)
        self.sent_speed, self.sent_turn = values["speed"], values["turn"]
        self.moving = values["speed"] != 0.0
        self.last_drive = t


def keyboard_page(style: DriverStyle) -> KeyboardPage:
    """A rover's keyboard page: arrow up sends the cruise speed (released: stand), left and
    right a fixed turn (released: straight); space sends `stop`."""
    return KeyboardPage(
        {"speed": Keys((style.keyboard_speed,)), "turn": Keys((-style.key_turn, style.key_turn))}
    )


class TickDecision(Protocol):
    """What a policy driver reads of a decision (`rovertrain.runtime.Decision`)."""

    @property
    def send(self) -> Mapping[str, bool]: ...

    @property
    def values(self) -> Mapping[str, Mapping[str, float]]: ...


class TickPolicy(Protocol):
    """What a policy driver needs: `rovertrain.runtime.RoverPolicy`'s interface."""

    schema: Schema
    tick_ms: int

    def reset(self) -> None: ...

    def observe_command(
        self,
        t_ms: float,
        command_type: str,
        values: Mapping[str, float] | None = None,
        by: str = HUMAN,
    ) -> bool: ...

    def tick(self, frame: np.ndarray, t_ms: float) -> TickDecision: ...


def commands_from_decision(
    t_ms: float,
    schema: Sequence[Slot],
    fire: Mapping[str, bool],
    values: Mapping[str, Mapping[str, float]],
) -> list[SentCommand]:
    """What a rover sends for one decision: a firing stop-role type wins over movement (the
    stop is the safe choice); every firing `other` type is sent too."""
    stops = [slot for slot in schema if slot["role"] == "stop" and fire.get(slot["type"])]
    moves = [slot for slot in schema if slot["role"] == "movement" and fire.get(slot["type"])]
    others = [slot for slot in schema if slot["role"] == "other" and fire.get(slot["type"])]
    sent: list[SentCommand] = []
    if stops:
        sent.append(SentCommand(t_ms, str(stops[0]["type"]), None))
    elif moves:
        slot = moves[0]
        named = values.get(slot["type"], {})
        sent.append(
            SentCommand(
                t_ms,
                str(slot["type"]),
                {str(name): round(float(named.get(name, 0.0)), 4) for name in slot["values"]},
            )
        )
    for slot in others:
        named = values.get(slot["type"], {})
        carried = {str(name): round(float(named.get(name, 0.0)), 4) for name in slot["values"]}
        sent.append(SentCommand(t_ms, str(slot["type"]), carried or None))
    return sent
