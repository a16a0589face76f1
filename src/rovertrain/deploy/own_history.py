"""`replay --own-history`: what the rover would have done had the policy driven it, as far as
a recording can say: its own commands make the history, the frames stay the person's.

Pure figures over two command streams (the person's and the policy's) on the 100 ms ticks:
where each rover stands and moves, whether the policy's rover comes to rest where the
person's did, and how often each sends. No torch, no video.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.command_schema import MOTION_ROLES
from rovertrain.deploy.replay_figures import STOP_MATCH_MS
from rovertrain.runtime.state import last_before
from rovertrain.sim.rollout import ratio

MOVEMENT, STOP = "movement", "stop"


@dataclass(frozen=True)
class CommandRole:
    """A command's time and its type's role (stop and movement count here; "" unknown)."""

    t: float
    role: str


def moving_at(sent: Sequence[CommandRole], ticks: np.ndarray) -> np.ndarray:
    """bool [N]: at each tick, whether the rover executes a movement command: the last stop-
    or movement-role command sent strictly before the tick is a movement (a rover nothing was
    sent to, or whose last such command was a stop, stands). Strictly before, as the state the
    policy sees at a tick holds the commands before it."""
    ordered = sorted((item for item in sent if item.role in MOTION_ROLES), key=lambda s: s.t)
    times = np.asarray([item.t for item in ordered], dtype=np.float64)
    moving = np.asarray([item.role == MOVEMENT for item in ordered] + [False], dtype=bool)
    latest = last_before(times, np.asarray(ticks, dtype=np.float64))
    result: np.ndarray = moving[latest]  # index -1 (nothing sent yet) is the trailing False
    return result


def rest_onsets(ticks: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """The ticks at which a moving rover comes to rest (moving at the tick before, not now)."""
    ticks = np.asarray(ticks)
    came_to_rest = ~moving[1:] & moving[:-1]
    onsets: np.ndarray = ticks[1:][came_to_rest]
    return onsets


def matched_rests(person: np.ndarray, policy: np.ndarray) -> list[float]:
    """Each person's rest paired with one of the policy's rests within `STOP_MATCH_MS`, each
    rest in one pair at most, as many pairs as there can be; per pair the policy's onset less
    the person's (ms). Both sorted: each person's rest takes the earliest policy rest not yet
    taken that is no more than the window before it, if it is within the window after it
    (with one window width for every rest, earliest-first finds the most pairs)."""
    pairs: list[float] = []
    position = 0
    for onset in person:
        while position < len(policy) and policy[position] < onset - STOP_MATCH_MS:
            position += 1
        if position < len(policy) and policy[position] <= onset + STOP_MATCH_MS:
            pairs.append(float(policy[position] - onset))
            position += 1
    return pairs


@dataclass(frozen=True)
class OwnHistoryFigures:
    """The `replayed` event's `ownHistory` object (its fields: docs/runtime.md, `replay`)."""

    ticks: int
    person_rests: int
    policy_rests: int
    matched: tuple[float, ...]  # per pair: the policy's rest onset less the person's, ms
    moving_agreement: float | None
    stood_while_person_moved: float | None
    moved_while_person_stood: float | None
    person_commands: int
    policy_commands: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        seconds = self.seconds or None
        person_rate = ratio(self.person_commands, seconds)
        policy_rate = ratio(self.policy_commands, seconds)
        matched = len(self.matched)
        return {
            "ticks": self.ticks,
            "personRests": self.person_rests,
            "restsMatched": matched,
            "restRecall": ratio(matched, self.person_rests),
            "medianRestOffsetMs": float(np.median(self.matched)) if self.matched else None,
            "extraRests": self.policy_rests - matched,
            "matchWindowMs": STOP_MATCH_MS,
            "movingAgreement": self.moving_agreement,
            "stoodWhilePersonMoved": self.stood_while_person_moved,
            "movedWhilePersonStood": self.moved_while_person_stood,
            "personCommandsPerSecond": person_rate,
            "policyCommandsPerSecond": policy_rate,
            "commandRateRatio": ratio(policy_rate, person_rate),
        }


def share(mask: np.ndarray) -> float | None:
    """The share of True in `mask`; None when it is empty (no tick to judge)."""
    return float(mask.mean()) if mask.size else None


def own_history_figures(
    ticks: np.ndarray,
    person: Sequence[CommandRole],
    policy: Sequence[CommandRole],
    tick_ms: float,
) -> OwnHistoryFigures:
    """The person's rover and the policy's on the same ticks: the rests each came to and how
    many pair up (`matched_rests`); the shares of ticks where both moved or both stood, and
    where one stood while the other moved; the stop- and movement-role commands each sent
    over the ticks' span, [first tick, last tick + tick_ms)."""
    ticks = np.asarray(ticks, dtype=np.float64)
    policy_moving, person_moving = moving_at(policy, ticks), moving_at(person, ticks)
    person_rests = rest_onsets(ticks, person_moving)
    policy_rests = rest_onsets(ticks, policy_moving)
    span = (ticks[0], ticks[-1] + tick_ms) if len(ticks) else (0.0, 0.0)

    def commands(sent: Sequence[CommandRole]) -> int:
        return sum(1 for item in sent if item.role in MOTION_ROLES and span[0] <= item.t < span[1])

    return OwnHistoryFigures(
        ticks=len(ticks),
        person_rests=len(person_rests),
        policy_rests=len(policy_rests),
        matched=tuple(matched_rests(person_rests, policy_rests)),
        moving_agreement=share(policy_moving == person_moving),
        stood_while_person_moved=share(~policy_moving & person_moving),
        moved_while_person_stood=share(policy_moving & ~person_moving),
        person_commands=commands(person),
        policy_commands=commands(policy),
        seconds=len(ticks) * tick_ms / 1000,
    )


def sent_roles(
    commands: Sequence[tuple[float, str]], roles: Mapping[str, str]
) -> list[CommandRole]:
    """(time, type) pairs as `CommandRole`, each with its type's role ("" for an unknown type)."""
    return [CommandRole(float(t), roles.get(kind, "")) for t, kind in commands]
