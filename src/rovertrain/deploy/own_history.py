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

from rovertrain.deploy.replay_figures import STOP_MATCH_MS

MOVEMENT, STOP = "movement", "stop"


@dataclass(frozen=True)
class Sent:
    """One stop- or movement-role command (the type's role only matters here)."""

    t: float
    role: str


def moving_at(sent: Sequence[Sent], ticks: np.ndarray) -> np.ndarray:
    """bool [N]: at each tick, whether the rover executes a movement command: the last stop-
    or movement-role command sent strictly before the tick is a movement (a rover nothing was
    sent to, or whose last such command was a stop, stands). Strictly before, as the state the
    policy sees at a tick holds the commands before it."""
    ordered = sorted((item for item in sent if item.role in (MOVEMENT, STOP)), key=lambda s: s.t)
    times = np.asarray([item.t for item in ordered], dtype=np.float64)
    moving = np.asarray([item.role == MOVEMENT for item in ordered] + [False], dtype=bool)
    latest = np.searchsorted(times, np.asarray(ticks, dtype=np.float64), side="left") - 1
    result: np.ndarray = moving[latest]  # index -1 (nothing sent yet) is the trailing False
    return result


def rest_onsets(ticks: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """The ticks at which a moving rover comes to rest (moving at the tick before, not now)."""
    ticks = np.asarray(ticks)
    came_to_rest = ~moving[1:] & moving[:-1]
    onsets: np.ndarray = ticks[1:][came_to_rest]
    return onsets


@dataclass(frozen=True)
class OwnHistoryFigures:
    """The `replayed` event's `ownHistory` object (docs/learning.md, "`rovertrain replay`")."""

    ticks: int
    person_rests: int
    matched: tuple[float, ...]  # per person's rest matched: policy's rest onset - person's, ms
    extra_rests: int  # the policy's rover came to rest with no person's rest within 2 s
    moving_agreement: float | None
    stood_while_person_moved: float | None
    moved_while_person_stood: float | None
    person_commands: int
    policy_commands: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        person_rate = self.person_commands / self.seconds if self.seconds else None
        policy_rate = self.policy_commands / self.seconds if self.seconds else None
        matched = len(self.matched)
        return {
            "ticks": self.ticks,
            "personRests": self.person_rests,
            "restsMatched": matched,
            "restRecall": matched / self.person_rests if self.person_rests else None,
            "medianRestOffsetMs": float(np.median(self.matched)) if self.matched else None,
            "extraRests": self.extra_rests,
            "matchWindowMs": STOP_MATCH_MS,
            "movingAgreement": self.moving_agreement,
            "stoodWhilePersonMoved": self.stood_while_person_moved,
            "movedWhilePersonStood": self.moved_while_person_stood,
            "personCommandsPerSecond": person_rate,
            "policyCommandsPerSecond": policy_rate,
            "commandRateRatio": (
                policy_rate / person_rate if person_rate and policy_rate is not None else None
            ),
        }


def share(mask: np.ndarray) -> float | None:
    return float(mask.mean()) if mask.size else None


def own_history_figures(
    ticks: np.ndarray,
    person: Sequence[Sent],
    policy: Sequence[Sent],
    tick_ms: float,
) -> OwnHistoryFigures:
    """The person's rover and the policy's on the same ticks: each rest the person's rover came
    to, matched by the policy's nearest within `STOP_MATCH_MS` (each of the policy's rests
    matches one person's rest at most); the shares of ticks where they agree and where one
    stood while the other moved; commands per second of each (stop- and movement-role)."""
    ticks = np.asarray(ticks, dtype=np.float64)
    mine, theirs = moving_at(policy, ticks), moving_at(person, ticks)
    person_rests, policy_rests = rest_onsets(ticks, theirs), rest_onsets(ticks, mine)
    free = list(policy_rests)
    matched: list[float] = []
    for onset in person_rests:
        near = [t for t in free if abs(t - onset) <= STOP_MATCH_MS]
        if near:
            nearest = min(near, key=lambda t: abs(t - onset))
            free.remove(nearest)
            matched.append(float(nearest - onset))
    extra = sum(1 for t in policy_rests if not np.any(np.abs(person_rests - t) <= STOP_MATCH_MS))
    motion = (MOVEMENT, STOP)
    seconds = len(ticks) * tick_ms / 1000
    return OwnHistoryFigures(
        ticks=len(ticks),
        person_rests=len(person_rests),
        matched=tuple(matched),
        extra_rests=int(extra),
        moving_agreement=share(mine == theirs),
        stood_while_person_moved=share(~mine & theirs),
        moved_while_person_stood=share(mine & ~theirs),
        person_commands=sum(1 for item in person if item.role in motion),
        policy_commands=sum(1 for item in policy if item.role in motion),
        seconds=seconds,
    )


def sent_roles(commands: Sequence[tuple[float, str]], roles: Mapping[str, str]) -> list[Sent]:
    """(time, type) pairs as `Sent`, each with its type's role ("" for an unknown type)."""
    return [Sent(float(t), roles.get(kind, "")) for t, kind in commands]
