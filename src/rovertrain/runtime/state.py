"""The command-state vector at a 100 ms tick: the one definition, for training and the rover.

Per slot (command type in the schema), from the commands sent strictly before the tick:
`lastValue[0..VALUES)` (the values of the last command, 0 for a value it did not carry),
`neverSent`, `min(elapsed, 1 s) / 1 s`, `min(elapsed, 10 s) / 10 s` and ten one-hot 100 ms
bins of the elapsed time. A slot never sent has elapsed = +inf: neverSent 1, ramps 1, no bin.

A superseded slot (`superseded_motion`: a stop- or movement-role type sent before the last
command of another such type, so not what the rover executes) shows no 100 ms bin and a short
ramp of 1; its long ramp still says how long ago it was sent, which is how long the rover has
done what it does now. Why: a person re-sends a stop every keepalive while blocked and only a
drive ends that, so "the last stop was 400 ms ago" alone predicts the next stop; policies that
learned it re-sent stop 400 ms after their previous stop even after their own restart, and
drive 400 ms after their previous drive even after their own stop, and crept stop-go whatever
the camera showed (docs/learning.md, "A command that re-sends itself").

`encode_states` turns (elapsed, last values) into the vector; `label_windows` (whole
recordings, vectorised) and `StateTracker` (one command at a time, on the rover) both call it.
Pure numpy: no torch, no av.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import numpy as np

from rovertrain.contracts.command_schema import MOTION_ROLES, SLOTS, VALUES, Slot
from rovertrain.contracts.observation import (
    STATE_BIN_MS,
    STATE_BINS,
    STATE_FEATURES_PER_SLOT,
    STATE_LONG_MS,
    STATE_SHORT_MS,
)

_BIN_INDEX = np.arange(STATE_BINS, dtype=np.float64)
# Per-slot feature indices, after the `lastValue` ones.
NEVER_SENT = VALUES
SHORT_RAMP = VALUES + 1
LONG_RAMP = VALUES + 2
"""`min(elapsed, 10 s) / 10 s`: 1 when silent for 10 s or more, or never sent."""
FIRST_BIN = VALUES + 3


def superseded_motion(elapsed: np.ndarray, motion: np.ndarray) -> np.ndarray:
    """bool [N, SLOTS]: the stop- and movement-role slots (`motion`, bool [SLOTS]) sent
    strictly before the newest command among those slots. elapsed: [N, SLOTS] ms (inf: never)."""
    among = np.where(motion[None, :], elapsed, np.inf)
    newest = among.min(axis=1, keepdims=True)
    superseded: np.ndarray = motion[None, :] & np.isfinite(elapsed) & (elapsed > newest)
    return superseded


def motion_slots(schema: Sequence[Slot]) -> np.ndarray:
    """bool [SLOTS]: the schema's stop- and movement-role slots."""
    motion = np.zeros(SLOTS, dtype=bool)
    motion[: len(schema)] = [slot["role"] in MOTION_ROLES for slot in schema]
    return motion


def encode_states(
    elapsed: np.ndarray, last_values: np.ndarray, motion: np.ndarray | None = None
) -> np.ndarray:
    """elapsed: float64 [N, SLOTS] ms since the slot's last command (inf: never sent);
    last_values: float32 [N, SLOTS, VALUES]; motion: bool [SLOTS], the stop- and
    movement-role slots, whose superseded ones show no bin and a short ramp of 1 (None: none
    do, the encoding of models exported before it). Returns float32 [N, SLOTS * FEATURES]."""
    count = elapsed.shape[0]
    states = np.zeros((count, SLOTS, STATE_FEATURES_PER_SLOT), dtype=np.float32)
    seen = np.isfinite(elapsed)
    states[:, :, :VALUES] = np.where(seen[:, :, None], last_values, 0.0)
    states[:, :, NEVER_SENT] = (~seen).astype(np.float32)
    states[:, :, SHORT_RAMP] = np.minimum(elapsed, STATE_SHORT_MS) / STATE_SHORT_MS
    states[:, :, LONG_RAMP] = np.minimum(elapsed, STATE_LONG_MS) / STATE_LONG_MS
    with np.errstate(invalid="ignore"):
        bins = np.floor(elapsed / STATE_BIN_MS)
    states[:, :, FIRST_BIN:] = bins[:, :, None] == _BIN_INDEX
    if motion is not None:
        superseded = superseded_motion(elapsed, motion)
        states[superseded, SHORT_RAMP] = 1.0
        states[superseded, FIRST_BIN:] = 0.0
    return states.reshape(count, SLOTS * STATE_FEATURES_PER_SLOT)


def last_values_of(states: np.ndarray) -> np.ndarray:
    """The `lastValue` features of state vectors [N, SLOTS * FEATURES] as [N, SLOTS, VALUES]."""
    per_slot = states.reshape(len(states), SLOTS, STATE_FEATURES_PER_SLOT)
    last: np.ndarray = per_slot[:, :, :VALUES]
    return last


def recency_of(states: np.ndarray) -> np.ndarray:
    """How long ago each slot was last sent, [N, SLOTS] in [0, 1] (1: 10 s or more, or never):
    the long elapsed ramp, enough to tell which type was sent most recently."""
    per_slot = states.reshape(len(states), SLOTS, STATE_FEATURES_PER_SLOT)
    recency: np.ndarray = np.where(
        per_slot[:, :, NEVER_SENT] > 0, np.inf, per_slot[:, :, LONG_RAMP]
    )
    return recency


def value_row(names: Sequence[str], values: Mapping[str, float]) -> np.ndarray:
    """A command's values in the slot's order (0 where the command did not carry one)."""
    row = np.zeros(VALUES, dtype=np.float32)
    for column, name in enumerate(names[:VALUES]):
        if name in values:
            row[column] = values[name]
    return row


def last_before(times: np.ndarray, ticks: np.ndarray) -> np.ndarray:
    """Index of the last of `times` (sorted) strictly before each tick, -1 if none."""
    return np.searchsorted(times, ticks, side="left") - 1


def _forward(value: float, latest: float, what: str) -> float:
    """`value` as a float, refused when not finite or earlier than `latest`."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{what} {value!r} is not a finite number of ms")
    if number < latest:
        raise ValueError(f"{what} goes backwards: {number} ms after {latest} ms")
    return number


class StateTracker:
    """The state vector built incrementally from the commands actually sent.

    `observe(t, type, values)` for every command, in time order; `state_at(tick)` for ticks in
    increasing order. Commands with t >= the tick are held until a later tick, exactly as the
    batch labeller's "strictly before" does. Unknown types are counted and ignored.
    """

    def __init__(self, schema: Sequence[Slot], superseded: bool = True):
        """`superseded`: encode superseded stop- and movement-role slots without their bins
        (the training encoding since policy version 4; False for models exported before)."""
        if len(schema) > SLOTS:
            raise ValueError(f"schema has {len(schema)} slots, at most {SLOTS}")
        self.index = {str(slot["type"]): position for position, slot in enumerate(schema)}
        self.names = [list(slot["values"]) for slot in schema]
        self.motion = motion_slots(schema) if superseded else None
        self.reset()

    def reset(self) -> None:
        self.last_time = np.full(SLOTS, np.inf)
        self.seen = np.zeros(SLOTS, dtype=bool)
        self.last_values = np.zeros((SLOTS, VALUES), dtype=np.float32)
        self.pending: list[tuple[float, int, np.ndarray]] = []
        self.latest_command = -math.inf
        self.latest_tick = -math.inf
        self.unknown_commands = 0

    def observe(self, t_ms: float, command_type: str, values: Mapping[str, float]) -> bool:
        """Record one sent command; False (and counted) when its type has no slot."""
        t = self.latest_command = _forward(t_ms, self.latest_command, "command time")
        slot = self.index.get(command_type)
        if slot is None:
            self.unknown_commands += 1
            return False
        row = value_row(self.names[slot], values)
        if t < self.latest_tick:
            self._commit(t, slot, row)
        else:
            self.pending.append((t, slot, row))
        return True

    def _commit(self, t: float, slot: int, row: np.ndarray) -> None:
        self.last_time[slot] = t
        self.seen[slot] = True
        self.last_values[slot] = row

    def state_after(
        self, t_ms: float, command_type: str, values: Mapping[str, float], tick_ms: float
    ) -> np.ndarray:
        """The state at `tick_ms` had `command_type` been sent at `t_ms`, or after the last
        command observed if that came later: a question to the policy about a command not
        sent. The tracker is left as it was."""
        other = copy.deepcopy(self)
        t = max(float(t_ms), other.latest_command)
        other.observe(t, command_type, values)
        return other.state_at(max(float(tick_ms), other.latest_tick))

    def state_at(self, tick_ms: float) -> np.ndarray:
        """float32 [SLOTS * FEATURES]: the state the policy sees at this tick."""
        tick = self.latest_tick = _forward(tick_ms, self.latest_tick, "tick time")
        keep = []
        for t, slot, row in self.pending:
            if t < tick:
                self._commit(t, slot, row)
            else:
                keep.append((t, slot, row))
        self.pending = keep
        elapsed = np.where(self.seen, tick - self.last_time, np.inf)
        state: np.ndarray = encode_states(elapsed[None, :], self.last_values[None], self.motion)[0]
        return state
