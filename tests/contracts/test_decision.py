"""The decision knobs: declared once, carried by model.json and runtime.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rovertrain.contracts.decision import (
    RUNTIME_KEYS,
    DecisionRules,
    RecordedRulesError,
    recorded_rules,
)
from rovertrain.contracts.settings import knob_json_schema, knobs

SCHEMAS = Path(__file__).resolve().parents[2] / "src" / "rovertrain" / "schemas"


def test_model_json_carries_each_knob_with_its_declared_bounds() -> None:
    properties = json.loads((SCHEMAS / "model.schema.json").read_text())["properties"]
    for declared in knobs(DecisionRules):
        bounds = knob_json_schema(declared.spec)
        del bounds["default"], bounds["description"]
        described = properties[declared.name]
        assert {key: described[key] for key in bounds} == bounds, declared.name


def test_model_json_and_runtime_json_name_the_same_rules() -> None:
    rules = DecisionRules(
        actionThreshold=0.3, steeringDeadband=0.2, startThreshold=0.1, keepPressedAbove=0.7
    )
    recorded = {
        "actionThreshold": 0.3,
        "steeringDeadband": 0.2,
        "startThreshold": 0.1,
        "keepPressedAbove": 0.7,
    }
    assert rules.to_json() == recorded
    assert recorded_rules(rules.to_json()) == rules
    as_runtime = {RUNTIME_KEYS.get(name, name): value for name, value in rules.to_json().items()}
    assert as_runtime == {
        "threshold": 0.3,
        "steeringDeadband": 0.2,
        "startThreshold": 0.1,
        "keepPressedAbove": 0.7,
    }
    assert recorded_rules(as_runtime, RUNTIME_KEYS) == rules
    assert rules.overridden(steeringDeadband=0.0) == DecisionRules(0.3, 0.0, 0.1, 0.7)
    assert rules.overridden() == rules


def test_a_record_from_before_the_start_rule_starts_from_the_event_head_alone() -> None:
    """A parked rover: new jobs send the likelier motion command at once (0); a model.json
    or runtime.json written before the knob runs as it was trained (1: never)."""
    assert DecisionRules().startThreshold == 0.0
    assert recorded_rules({"actionThreshold": 0.5}).startThreshold == 1.0
    assert recorded_rules({"threshold": 0.5}, RUNTIME_KEYS).startThreshold == 1.0


def test_a_record_from_before_the_kept_press_sends_every_release() -> None:
    """A key the person taps: new jobs keep back a release the policy would take back (0.5);
    a model.json or runtime.json written before the knob sends every release (1)."""
    assert DecisionRules().keepPressedAbove == 0.5
    assert recorded_rules({"actionThreshold": 0.5}).keepPressedAbove == 1.0
    assert recorded_rules({"threshold": 0.5}, RUNTIME_KEYS).keepPressedAbove == 1.0


def test_a_bad_recorded_knob_is_named() -> None:
    with pytest.raises(RecordedRulesError, match=r"^threshold: must be a number, got null$"):
        recorded_rules({"threshold": None}, RUNTIME_KEYS)
