"""How soon a person re-sends a command that changes nothing, found in the recordings.

A teleop page re-sends the held command every keepalive (400-500 ms on a gamepad page), a
keyboard page every key repeat (250 ms); a person never re-sends one every 100 ms. A policy
whose event head fires at every tick where a re-send is likely sends it ten times a second:
its stop while it waits, its drive on a straight. The published policy does not re-send the
command the rover executes sooner than the person did (`runtime.policy.early_resends`); a
change (another type, other values) goes out at once.

Pure (numpy only).
"""

from __future__ import annotations

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, Schema
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT, STATE_LONG_MS
from rovertrain.learn.metrics import command_changes
from rovertrain.runtime.state import LONG_RAMP, last_values_of, recency_of

FEWEST_RESENDS = 20
"""Fewer re-sends of a type than this say nothing about how soon a person re-sends it."""


def resend_after_ms(
    states: np.ndarray, fires: np.ndarray, values: np.ndarray, available: np.ndarray
) -> np.ndarray:
    """float [SLOTS]: per type, the median time since its last command at the ticks of the
    windows in which a person re-sent it (0: fewer than `FEWEST_RESENDS` re-sends). A rover
    re-sent its command no sooner than that is sent it about as often as the person did."""
    recency = recency_of(states)
    resends = fires.astype(bool) & ~command_changes(
        fires.astype(bool), values, available.astype(bool), last_values_of(states), recency
    )
    elapsed = states.reshape(len(states), SLOTS, STATE_FEATURES_PER_SLOT)[:, :, LONG_RAMP]
    after = np.zeros(SLOTS, dtype=np.float64)
    for slot in range(SLOTS):
        chosen = resends[:, slot]
        if chosen.sum() >= FEWEST_RESENDS:
            after[slot] = float(np.median(elapsed[chosen, slot])) * STATE_LONG_MS
    return after


def resend_json(after: np.ndarray, schema: Schema) -> dict[str, float]:
    """{type: ms} for the types with a measured interval (model.json, runtime.json)."""
    return {
        slot["type"]: round(float(after[index]), 1)
        for index, slot in enumerate(schema[:SLOTS])
        if after[index] > 0
    }
