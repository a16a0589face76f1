"""How a published policy turns its outputs into commands: the job's decision knobs.

The job file holds them at its top level; model.json carries the job's values to export and
the rover's runtime, which fall back on these defaults for checkpoints written before a knob
existed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rovertrain.contracts.settings import knob

DEFAULT_ACTION_THRESHOLD = 0.5
DEFAULT_STEERING_DEADBAND = 0.1
"""docs/learning.md, "Steering between the events"."""


@dataclass(frozen=True)
class DecisionRules:
    """Firing and steering: when the policy sends a command."""

    actionThreshold: float = knob(
        DEFAULT_ACTION_THRESHOLD,
        0,
        1,
        exclusive_minimum=True,
        exclusive_maximum=True,
        doc="a command type's event fires when its predicted probability reaches this (the "
        "gate, replay and the rover all use it)",
    )
    steeringDeadband: float = knob(
        DEFAULT_STEERING_DEADBAND,
        0,
        2,
        doc="closed loop: the published policy re-sends its movement command when a predicted "
        "value moves more than this from what the rover executes, fired or not (0: only when "
        "the event head fires)",
    )
