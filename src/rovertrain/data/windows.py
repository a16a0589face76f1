"""Labels, state and categories of 100 ms windows: pure numpy, no torch, no av.

A tick at time T (ms on the command clock) defines the window [T, T + 100):
- state: per slot, the last values sent and the time since that slot's last command, from
  commands strictly before T (`runtime.state`: the same definition the rover runs);
- targets: the slot fires if a command of its type has t in [T, T + 100); values are those of
  the last such command, with an availability mask;
- the next window's fires ([T + 100, T + 200)): what the gate's precision forgives a fire
  one tick early for (`learn.metrics.timely_precision`), never a target;
- category: stop if a stop-role slot fires, else command if any slot fires, else none.

Who sent a command (`Command.by`): every command is part of the state (it was sent), but only
a person's are targets. A window whose rover a policy was driving (the last command before the
window's end was the policy's) and where no person's command lands is `autonomous`: nobody
decided anything there that training could imitate, so it is not a usable window. A person's
command right after a policy's is a take-over. Who drives is read from the stop- and
movement-role commands only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.command_schema import (
    MOTION_ROLES,
    POLICY,
    SLOTS,
    VALUES,
    Schema,
    is_stop,
)
from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT, TICK_MS
from rovertrain.data.field import FieldFigures
from rovertrain.data.recording import Command
from rovertrain.runtime.state import encode_states, last_before, motion_slots, value_row

CATEGORY_NONE, CATEGORY_COMMAND, CATEGORY_STOP = 0, 1, 2
CATEGORY_NAMES = ("none", "command", "stop")


@dataclass
class Labels:
    states: np.ndarray  # float32 [N, SLOTS * STATE_FEATURES_PER_SLOT]
    fires: np.ndarray  # uint8 [N, SLOTS]
    fires_next: np.ndarray  # uint8 [N, SLOTS]: a person's command in [T + 100, T + 200)
    values: np.ndarray  # float32 [N, SLOTS, VALUES]
    available: np.ndarray  # uint8 [N, SLOTS, VALUES]
    category: np.ndarray  # int8 [N]
    unsupported: np.ndarray  # bool [N]: an unsupported command lands in this window
    command_event_counts: list[int]  # per slot, a person's commands landing in some window
    unsupported_command_events: int
    autonomous: np.ndarray  # bool [N]: a policy drove, no person's command landed
    take_overs: int  # a person's commands right after a policy's
    corrections: np.ndarray  # bool [N]: within CORRECTION_MS after a take-over began


def control_figures(ticks: np.ndarray, commands: Sequence[Command]) -> tuple[np.ndarray, int]:
    """(autonomous [N], take-overs) from the stop- and movement-role `commands`, sorted by
    time: see the module docstring."""
    times = np.asarray([command.t for command in commands], dtype=np.float64)
    by_policy = np.asarray([command.by == POLICY for command in commands], dtype=bool)
    if not by_policy.any():
        return np.zeros(len(ticks), dtype=bool), 0
    starts = ticks.astype(np.float64)
    ends = starts + TICK_MS
    last = np.searchsorted(times, ends, side="left") - 1
    driven = (last >= 0) & by_policy[np.maximum(last, 0)]
    human_times = times[~by_policy]
    lands = np.searchsorted(human_times, ends, side="left") > np.searchsorted(
        human_times, starts, side="left"
    )
    take_overs = int((by_policy[:-1] & ~by_policy[1:]).sum())
    return driven & ~lands, take_overs


CORRECTION_MS = 2_000.0
"""How long after a take-over a person's windows count as the correction (`takeOverRepeats`)."""


def correction_windows(ticks: np.ndarray, commands: Sequence[Command]) -> np.ndarray:
    """bool [N]: windows that start within CORRECTION_MS after a take-over (a person's stop- or
    movement-role command right after a policy's) among `commands` (those roles, by time)."""
    by_policy = np.asarray([command.by == POLICY for command in commands], dtype=bool)
    starts = ticks.astype(np.float64)
    marked = np.zeros(len(ticks), dtype=bool)
    if len(by_policy) < 2:
        return marked
    times = np.asarray([command.t for command in commands], dtype=np.float64)
    for t in times[1:][by_policy[:-1] & ~by_policy[1:]]:
        marked |= (starts + TICK_MS > t) & (starts < t + CORRECTION_MS)
    return marked


def supervised_windows(autonomous: np.ndarray) -> int:
    """Windows from the first one a policy drove to the end: the time it was meant to drive
    (field figures' `supervisedSeconds`; before it, a person drove to the hand-over)."""
    return int(len(autonomous) - np.argmax(autonomous)) if autonomous.any() else 0


def driving_field_figures(
    ticks: np.ndarray, commands: Sequence[Command], roles: Mapping[str, str]
) -> FieldFigures:
    """A drive's field figures from its commands alone, by the definitions a job applies to
    a recording (`control_figures`, `supervised_windows`): what `drive --supervised` reports
    of a rollout is what the next job reads from its recording."""
    autonomous, take_overs = control_figures(ticks, driving_commands(commands, roles))
    return FieldFigures.of_windows(
        supervised_windows(autonomous), int(autonomous.sum()), take_overs
    )


def driving_commands(commands: Sequence[Command], roles: Mapping[str, str]) -> list[Command]:
    """The stop- and movement-role commands, by time: the ones that say who drives (a
    person's horn is no take-over)."""
    driving = [c for c in commands if roles.get(c.type) in MOTION_ROLES]
    return sorted(driving, key=lambda c: c.t)


def command_table(
    commands: Sequence[Command], names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One slot's commands as (times [N], values [N, VALUES], present [N, VALUES])."""
    times = np.asarray([command.t for command in commands], dtype=np.float64)
    table = np.zeros((len(commands), VALUES), dtype=np.float32)
    present = np.zeros((len(commands), VALUES), dtype=np.uint8)
    for row, command in enumerate(commands):
        table[row] = value_row(names, command.values)
        for column, name in enumerate(names):
            if name in command.values:
                present[row, column] = 1
    return times, table, present


def unsupported_windows(times: Sequence[float], ticks: np.ndarray) -> tuple[np.ndarray, int]:
    """(windows an unsupported command lands in [N], how many such commands land in the
    span); `ticks` float, not empty."""
    unsupported = np.zeros(len(ticks), dtype=bool)
    if not times:
        return unsupported, 0
    sorted_times = np.sort(np.asarray(times))
    in_span = (sorted_times >= ticks[0]) & (sorted_times < ticks[-1] + TICK_MS)
    landing = ((sorted_times[in_span] - ticks[0]) // TICK_MS).astype(np.int64)
    unsupported[np.clip(landing, 0, len(ticks) - 1)] = True
    return unsupported, int(in_span.sum())


def landings(times: np.ndarray, ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tick T, of sorted command `times`: whether one lands in [T, T + 100), the index
    of the last that does, and whether one lands in the next window, [T + 100, T + 200)."""
    first = np.searchsorted(times, ticks, side="left")
    last = np.searchsorted(times, ticks + TICK_MS, side="left") - 1
    after = np.searchsorted(times, ticks + 2 * TICK_MS, side="left") - 1
    return last >= first, last, after > last


def window_categories(fires: np.ndarray, schema: Schema) -> np.ndarray:
    """int8 [N]: stop if a stop-role slot fires, else command if any slot fires, else none."""
    stop_slots = [position for position, slot in enumerate(schema) if is_stop(slot)]
    category = np.where(fires.any(axis=1), CATEGORY_COMMAND, CATEGORY_NONE).astype(np.int8)
    if stop_slots:
        category[fires[:, stop_slots].any(axis=1)] = CATEGORY_STOP
    return category


def label_windows(ticks: np.ndarray, commands: Sequence[Command], schema: Schema) -> Labels:
    count = len(ticks)
    ticks_f = ticks.astype(np.float64)
    states = np.zeros((count, SLOTS, STATE_FEATURES_PER_SLOT), dtype=np.float32)
    fires = np.zeros((count, SLOTS), dtype=np.uint8)
    fires_next = np.zeros((count, SLOTS), dtype=np.uint8)
    values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
    available = np.zeros((count, SLOTS, VALUES), dtype=np.uint8)
    event_counts = [0] * SLOTS
    index = {slot["type"]: position for position, slot in enumerate(schema)}
    by_slot: dict[int, list[Command]] = {}
    other_times: list[float] = []
    for command in commands:
        slot = index.get(command.type)
        if slot is None:
            other_times.append(command.t)
        else:
            by_slot.setdefault(slot, []).append(command)
    driving = driving_commands(commands, {slot["type"]: slot["role"] for slot in schema})
    autonomous, take_overs = control_figures(ticks, driving)
    corrections = correction_windows(ticks, driving)
    if count == 0:
        return Labels(
            states=states.reshape(0, -1),
            fires=fires,
            fires_next=fires_next,
            values=values,
            available=available,
            category=np.zeros(0, dtype=np.int8),
            unsupported=np.zeros(0, dtype=bool),
            command_event_counts=event_counts,
            unsupported_command_events=0,
            autonomous=autonomous,
            take_overs=take_overs,
            corrections=corrections,
        )
    span_end = ticks_f[-1] + TICK_MS
    unsupported, unsupported_events = unsupported_windows(other_times, ticks_f)
    elapsed = np.full((count, SLOTS), np.inf)  # never sent until a command is seen
    last_values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
    for slot, slot_commands in by_slot.items():
        times, table, present = command_table(slot_commands, schema[slot]["values"])
        # State: last command strictly before the tick (encoded below, as on the rover),
        # whoever sent it.
        previous = last_before(times, ticks_f)
        seen = previous >= 0
        safe = np.where(seen, previous, 0)
        elapsed[:, slot] = np.where(seen, ticks_f - times[safe], np.inf)
        last_values[:, slot] = np.where(seen[:, None], table[safe], 0.0)
        # Targets: a person's commands only.
        person = np.asarray([command.by != POLICY for command in slot_commands], dtype=bool)
        times, table, present = times[person], table[person], present[person]
        if not len(times):
            continue  # only a policy sent this type here: nothing to imitate
        # Targets: the last command with t in [tick, tick + 100).
        fired, last, fires_next[:, slot] = landings(times, ticks_f)
        fires[:, slot] = fired
        chosen = np.where(fired, last, 0)
        values[:, slot] = np.where(fired[:, None], np.clip(table[chosen], -1.0, 1.0), 0.0)
        available[:, slot] = np.where(fired[:, None], present[chosen], 0)
        in_span = (times >= ticks_f[0]) & (times < span_end)
        event_counts[slot] = int(in_span.sum())
    states = encode_states(elapsed, last_values, motion_slots(schema))  # [N, SLOTS * FEATURES]
    return Labels(
        states=states,
        fires=fires,
        fires_next=fires_next,
        values=values,
        available=available,
        category=window_categories(fires, schema),
        unsupported=unsupported,
        command_event_counts=event_counts,
        unsupported_command_events=unsupported_events,
        autonomous=autonomous,
        take_overs=take_overs,
        corrections=corrections,
    )


def category_counts(category: np.ndarray) -> dict[str, int]:
    return {name: int((category == code).sum()) for code, name in enumerate(CATEGORY_NAMES)}


@dataclass(frozen=True)
class LabelSummary:
    """A session's labels in numbers: window categories and command events per slot."""

    categories: dict[str, int]
    command_event_counts: list[int]
    unsupported_command_events: int
    unsupported_windows: int
    autonomous_windows: int = 0
    take_overs: int = 0
    supervised_windows: int = 0

    def to_json(self) -> JsonObject:
        document: JsonObject = {
            "categories": dict(self.categories),
            "commandEventCounts": list(self.command_event_counts),
            "unsupportedCommandEvents": self.unsupported_command_events,
            "unsupportedWindows": self.unsupported_windows,
        }
        if self.autonomous_windows or self.take_overs:  # a session a policy drove
            document["autonomousWindows"] = self.autonomous_windows
            document["takeOvers"] = self.take_overs
            document["supervisedWindows"] = self.supervised_windows
        return document


def summary(labels: Labels) -> LabelSummary:
    return LabelSummary(
        categories=category_counts(labels.category),
        command_event_counts=list(labels.command_event_counts),
        unsupported_command_events=labels.unsupported_command_events,
        unsupported_windows=int(labels.unsupported.sum()),
        autonomous_windows=int(labels.autonomous.sum()),
        take_overs=labels.take_overs,
        supervised_windows=supervised_windows(labels.autonomous),
    )
