"""How a published policy turns its outputs into commands: the job's decision knobs.

Declared once, here. The job file holds them at its top level (`parse_settings`); model.json
carries the job's values (`DecisionRules.to_json`), and export and the rover's runtime read
them back from model.json and runtime.json with `recorded_rules`. A record written before a
knob existed runs with what ran then, the knob's `before` value: steering did not exist before
`steeringDeadband`, so such a record steers with 0 (only fired events), at export and in the
runtime alike; a record from before `startThreshold` starts a parked rover only when the event
head fires (1); one from before `keepPressedAbove` sends every release of a key (1). New jobs
get the defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from rovertrain.contracts.errors import InvalidJob
from rovertrain.contracts.settings import knob, parse_record, settings_json


@dataclass(frozen=True)
class DecisionRules:
    """Firing and steering: when the policy sends a command."""

    actionThreshold: float = knob(
        0.5,
        0,
        1,
        exclusive_minimum=True,
        exclusive_maximum=True,
        doc="a command type's event fires when the chance that the person would have sent it "
        "since it was last sent reaches this (replay and the rover; an export without "
        "output.eventWeights, and the gate's held-out windows: its predicted probability)",
    )
    steeringDeadband: float = knob(
        0.1,
        0,
        2,
        before=0.0,
        doc="closed loop: the published policy re-sends its movement command when a predicted "
        "value moves more than this from what the rover executes, fired or not (0: only when "
        "the event head fires; a value sent at levels changes only when it fires)",
    )
    startThreshold: float = knob(
        0.0,
        0,
        1,
        before=1.0,
        doc="closed loop, a rover no stop or movement command was sent to since the runtime "
        "was loaded or reset (parked, the policy just engaged): its likeliest movement-role "
        "type is sent, fired or not, when its probability is above this and no stop fires "
        "(0: at the first tick; 1: only when the event head fires)",
    )
    keepPressedAbove: float = knob(
        0.5,
        0,
        1,
        before=1.0,
        doc="closed loop, a value sent at levels the person taps (a key): a release to its rest "
        "level (the level nearest 0) is not sent, the key kept pressed, when the policy asked "
        "with the key released expects, with what earlier sends owe, a level more than this "
        "share of the way back to the pressed one at the next tick (1: every release is sent)",
    )

    def to_json(self) -> dict[str, float]:
        """The knobs as the job file and model.json hold them, in declaration order."""
        return {name: float(value) for name, value in settings_json(self).items()}

    def runtime_json(self) -> dict[str, float]:
        """The knobs under runtime.json's names (`RUNTIME_KEYS`), as runtime.json, the
        `exported` event and the `model` field of `drove` and `replayed` hold them."""
        return {RUNTIME_KEYS.get(name, name): value for name, value in self.to_json().items()}

    def overridden(self, **given: float | None) -> DecisionRules:
        """These rules with the named knobs replaced (None: kept): `export`'s options."""
        return dataclasses.replace(self, **{k: v for k, v in given.items() if v is not None})


RUNTIME_KEYS = {"actionThreshold": "threshold"}
"""runtime.json's names for the knobs where they differ from the job's: its `threshold` is
older than the job knob's name, and every runtime reads it."""


class RecordedRulesError(ValueError):
    """A record's decision knob that is not a value the knob takes."""


def recorded_rules(
    record: Mapping[str, object], keys: Mapping[str, str] | None = None
) -> DecisionRules:
    """The decision rules a model.json (`keys` None) or runtime.json (`RUNTIME_KEYS`) holds;
    a knob it lacks is its `before` value. RecordedRulesError names the bad key."""
    try:
        return parse_record(DecisionRules, record, keys)
    except InvalidJob as error:
        raise RecordedRulesError(error.message.lstrip("/")) from None
