"""How much the event loss weighs a window where a command type fires, found in the pool.

A type a person sends in few windows (a warehouse `stop`, a horn) would be learned as "never":
the event loss counts each window where it fires as many silent ones, the ratio of the pool's
silent windows to its firing ones, bounded to `WEIGHT_RANGE` (docs/learning.md, "Seeing a rare
obstacle"). A model trained so answers the odds that the person sends, multiplied by the
weight: its 0.5 stands for a 1-in-(1 + weight) chance. The weights travel with the model
(`output.eventWeights`) so that the runtime can read its answers as the person's chance
(`runtime.policy.person_chance`).

Pure (numpy only).
"""

from __future__ import annotations

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, Schema

WEIGHT_RANGE = (1.0, 20.0)
"""A firing window counts as at least one and at most 20 silent ones."""


def event_weights(fires: np.ndarray) -> np.ndarray:
    """float [SLOTS]: per slot, the pool's silent windows over its firing ones within
    `WEIGHT_RANGE` (1 for a type that never fires). `fires`: [N, SLOTS] 0/1."""
    firing = fires.astype(np.float64).sum(axis=0)
    silent = len(fires) - firing
    weight = np.where(firing > 0, silent / np.maximum(firing, 1), 1.0)
    return np.clip(weight, *WEIGHT_RANGE)


def event_weights_json(weights: np.ndarray, schema: Schema) -> dict[str, float]:
    """{type: weight} for the schema's types (model.json, runtime.json)."""
    return {
        slot["type"]: round(float(weights[index]), 4) for index, slot in enumerate(schema[:SLOTS])
    }
