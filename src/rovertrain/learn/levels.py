"""Value levels: the few values a person's page sends, discovered from the recordings.

A keyboard page, a button pad or a person who taps sends each command value at a few fixed
levels (a turn of -1, 0 or 1; gas 0.4, nothing or brake -0.6). A value head trained with
squared error predicts the mean of the levels a state could get: a value no person sends
(half a turn), or, where the levels are far apart and one is more likely, the wrong one (the
coast between the gas and the brake, CarRacing keyboard: the car never gets going). For such a
value the policy classifies instead, one class per level. A value the person *taps* (its
level changes on at least `TAPPED_SHARE` of its sends: an arrow key in a bend) outputs the
expected level (the levels weighted by their probabilities), which the runtime sends as
levels spread over its sends so that they average it (`runtime.policy.level_to_send`), as a
person tapping a key turns half as hard by pressing it half the time. A value the person
*holds* (the cruise speed's up-arrow) outputs its most likely level: spread, it would send
the released key now and then and stop the rover where nobody stops.

The recordings, not a knob, decide: a value column is levelled when the training windows send
it at no more than `MOST_LEVELS` distinct values, these cover `LEVEL_COVERAGE` of its sends
and it was sent at least `FEWEST_SENDS` times. A joystick, a slider or a browser's analogue
stick sends hundreds of distinct values: regressed as before. Pure (numpy only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema

MOST_LEVELS = 8
"""Most levels one value column may have to be classified (a keyboard page sends 2-3 per value,
a button pad a few more); also the width of the policy's level head."""
LEVEL_COVERAGE = 0.995
"""The share of a column's sends its levels must cover (a hand-edited log line or a value
typed once does not make a joystick's column continuous, nor a keyboard's)."""
FEWEST_SENDS = 20
"""Fewer sends than this say nothing about a column: it is regressed."""
LEVEL_DECIMALS = 4
"""Values equal to this many decimals are one level (a page's levels are exact numbers; a
float32 round trip is not)."""
TAPPED_SHARE = 0.1
"""A levelled value whose level changes (against the last one sent) on at least this share of
its sends is tapped, below it is held. Keyboard recordings of the simulator (2026-12-06): the
turn 0.56-0.82 and CarRacing's gas 0.43 of their sends, the cruise speed 0.004-0.007: the
bar sits in a gap of two orders of magnitude, not at an edge of it."""


@dataclass(frozen=True)
class ValueLevels:
    """`values` [SLOTS, VALUES, MOST_LEVELS] float32 (ascending, unused entries 0) and `known`
    [SLOTS, VALUES, MOST_LEVELS] bool: which entries are levels. A column without any is
    regressed."""

    values: np.ndarray
    known: np.ndarray
    tapped: np.ndarray | None = None
    """bool [SLOTS, VALUES]: the levelled columns the person taps (None: every one)."""

    @staticmethod
    def none() -> ValueLevels:
        shape = (SLOTS, VALUES, MOST_LEVELS)
        return ValueLevels(np.zeros(shape, dtype=np.float32), np.zeros(shape, dtype=bool))

    @property
    def spread(self) -> np.ndarray:
        """bool [SLOTS, VALUES]: the levelled columns whose expected level is output (and
        spread over the sends); the other levelled ones output their most likely level."""
        tapped = np.ones(self.known.shape[:2], bool) if self.tapped is None else self.tapped
        return np.asarray(self.levelled & tapped)

    @property
    def levelled(self) -> np.ndarray:
        """bool [SLOTS, VALUES]: the columns sent as levels."""
        return np.asarray(self.known.any(axis=2))

    def of(self, slot: int, column: int) -> list[float]:
        """A column's levels, ascending, as the recordings wrote them (float32 undone)."""
        known = self.values[slot, column][self.known[slot, column]]
        return [round(float(v), LEVEL_DECIMALS) for v in known]

    def spread_json(self, schema: Schema) -> dict[str, list[str]]:
        """{type: [value names]} of the spread columns (model.json `output.values.spread`)."""
        named: dict[str, list[str]] = {}
        for slot, entry in enumerate(schema[:SLOTS]):
            for column, name in enumerate(entry["values"][:VALUES]):
                if self.spread[slot, column]:
                    named.setdefault(entry["type"], []).append(name)
        return named

    def to_json(self, schema: Schema) -> dict[str, dict[str, list[float]]]:
        """{type: {value name: [levels]}} for the levelled columns (model.json)."""
        named: dict[str, dict[str, list[float]]] = {}
        for slot, entry in enumerate(schema[:SLOTS]):
            for column, name in enumerate(entry["values"][:VALUES]):
                if self.known[slot, column].any():
                    named.setdefault(entry["type"], {})[name] = self.of(slot, column)
        return named


def nearest_levels(values: np.ndarray, levels: ValueLevels) -> np.ndarray:
    """`values` [N, SLOTS, VALUES] with each levelled column's value replaced by its nearest
    level: what a rover sends first for an expected level (evaluation scores that)."""
    snapped = np.array(values, dtype=np.float32, copy=True)
    for slot, column in zip(*np.nonzero(levels.levelled), strict=True):
        table = levels.values[slot, column][levels.known[slot, column]]
        distance = np.abs(snapped[:, slot, column, None] - table[None, :])
        snapped[:, slot, column] = table[distance.argmin(axis=1)]
    return snapped


def column_levels(sent: np.ndarray) -> list[float] | None:
    """The levels of one value column's sends (float, any shape), or None: regressed."""
    if sent.size < FEWEST_SENDS:
        return None
    distinct, counts = np.unique(
        np.round(sent.astype(np.float64), LEVEL_DECIMALS), return_counts=True
    )
    order = np.argsort(-counts, kind="stable")[:MOST_LEVELS]
    if counts[order].sum() < LEVEL_COVERAGE * sent.size:
        return None
    return sorted(float(level) for level in distinct[order])


def discover_levels(
    values: np.ndarray, available: np.ndarray, last_values: np.ndarray | None = None
) -> ValueLevels:
    """The levels of every column of the windows' sends ([N, SLOTS, VALUES] values and
    `available`, as a window set holds them), and, given the last values sent before each
    window (`runtime.state.last_values_of` of its states), which levelled columns are tapped."""
    found = ValueLevels.none()
    tapped = np.zeros((SLOTS, VALUES), dtype=bool)
    for slot in range(SLOTS):
        for column in range(VALUES):
            sent = available[:, slot, column].astype(bool)
            levels = column_levels(values[:, slot, column][sent])
            if levels is None:
                continue
            found.values[slot, column, : len(levels)] = levels
            found.known[slot, column, : len(levels)] = True
            if last_values is not None:
                before = last_values[:, slot, column][sent]
                changed = np.abs(values[:, slot, column][sent] - before) > 0.5 * 10**-LEVEL_DECIMALS
                tapped[slot, column] = changed.mean() >= TAPPED_SHARE
    return ValueLevels(found.values, found.known, None if last_values is None else tapped)
