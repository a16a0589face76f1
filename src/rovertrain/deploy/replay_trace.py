"""What `replay` sees of one session: what the human sent in each 100 ms window
(`HumanLabels`, the job's own labelling) and what the model predicted tick by tick
(`ReplayTrace`). The figures (`replay_figures`) and the pictures (`overlay`) read both."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema
from rovertrain.contracts.observation import TICK_MS
from rovertrain.data.recording import Command
from rovertrain.data.windows import Labels, label_windows


@dataclass(frozen=True)
class HumanWindows:
    """What the human sent in some windows (one row each; a row of nothing where none)."""

    fires: np.ndarray  # bool [N, SLOTS]
    values: np.ndarray  # float32 [N, SLOTS, VALUES]
    available: np.ndarray  # bool [N, SLOTS, VALUES]
    unsupported: np.ndarray  # bool [N]: an unsupported command lands in the window
    autonomous: np.ndarray  # bool [N]: a policy drove and no person's command landed
    fires_next: np.ndarray  # bool [N, SLOTS]: what the human sent in the window after


class HumanLabels:
    """What the human sent in each window, on a 100 ms grid covering every command."""

    def __init__(self, commands: list[Command], schema: Schema):
        times = [command.t for command in commands] or [0.0]
        self.first = math.floor(min(0.0, min(times)) / TICK_MS) * TICK_MS
        last = math.floor(max(times) / TICK_MS) * TICK_MS
        grid = np.arange(self.first, last + TICK_MS, TICK_MS, dtype=np.int64)
        self.labels: Labels = label_windows(grid, commands, schema)
        self.count = len(grid)

    def row(self, tick: int) -> int:
        """The grid row of the window starting at `tick`; -1 outside the grid."""
        index = (tick - self.first) // TICK_MS
        return int(index) if 0 <= index < self.count else -1

    def gather(self, rows: np.ndarray) -> HumanWindows:
        """The windows of these grid rows (-1: nothing sent)."""
        count = len(rows)
        fires = np.zeros((count, SLOTS), dtype=bool)
        fires_next = np.zeros((count, SLOTS), dtype=bool)
        values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
        available = np.zeros((count, SLOTS, VALUES), dtype=bool)
        unsupported = np.zeros(count, dtype=bool)
        autonomous = np.zeros(count, dtype=bool)
        inside = rows >= 0
        picked = rows[inside]
        fires[inside] = self.labels.fires[picked].astype(bool)
        fires_next[inside] = self.labels.fires_next[picked].astype(bool)
        values[inside] = self.labels.values[picked]
        available[inside] = self.labels.available[picked].astype(bool)
        unsupported[inside] = self.labels.unsupported[picked]
        autonomous[inside] = self.labels.autonomous[picked]
        return HumanWindows(fires, values, available, unsupported, autonomous, fires_next)


@dataclass(frozen=True)
class TraceArrays:
    """A `ReplayTrace` as arrays, one row per tick."""

    ticks: np.ndarray  # int64 [N], ms on the command clock
    probability: np.ndarray  # float64 [N, SLOTS]
    values: np.ndarray  # float32 [N, SLOTS, VALUES]
    sighted: np.ndarray  # float64 [N, SLOTS] with --blind (the camera's run), else [0, SLOTS]
    usable: np.ndarray  # bool [N]: a window training would use (frame fresh, all supported)
    human: np.ndarray  # int64 [N], the row in the label grid (-1: none)


@dataclass
class ReplayTrace:
    """Everything the replay saw, one row per tick."""

    ticks: list[int] = field(default_factory=list)
    probability: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    sighted: list[np.ndarray] = field(default_factory=list)  # --blind: the camera's run
    usable: list[bool] = field(default_factory=list)
    human: list[int] = field(default_factory=list)  # row in the label grid, -1: none

    def add(
        self, tick: int, probability: np.ndarray, values: np.ndarray, usable: bool, human: int
    ) -> None:
        self.ticks.append(tick)
        self.probability.append(probability)
        self.values.append(values)
        self.usable.append(usable)
        self.human.append(human)

    def arrays(self) -> TraceArrays:
        return TraceArrays(
            ticks=np.asarray(self.ticks, dtype=np.int64),
            probability=np.asarray(self.probability, dtype=np.float64).reshape(-1, SLOTS),
            values=np.asarray(self.values, dtype=np.float32).reshape(-1, SLOTS, VALUES),
            sighted=np.asarray(self.sighted, dtype=np.float64).reshape(-1, SLOTS),
            usable=np.asarray(self.usable, dtype=bool),
            human=np.asarray(self.human, dtype=np.int64),
        )
