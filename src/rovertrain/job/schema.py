"""Builds `schemas/job.schema.json` from the tables in `jobconfig` (a test keeps them equal).

Run `python -m rovertrain.job.schema > schemas/job.schema.json` after changing a field.
"""

from __future__ import annotations

import json
from typing import Any

from rovertrain.contracts.identifiers import IDENTIFIER
from rovertrain.job.config import (
    CHOICES,
    CONFIG_FIELDS,
    GATE_FIELDS,
    STEERING_DEADBAND,
    Number,
)


def _field(name: str, spec: Number) -> dict[str, Any]:
    result: dict[str, Any]
    if isinstance(spec.default, bool):
        result = {"type": "boolean"}
    elif isinstance(spec.default, str):
        result = {"enum": list(CHOICES[name])}
    else:
        result = {"type": "integer" if spec.integer else "number"}
        if spec.minimum is not None:
            key = "exclusiveMinimum" if spec.exclusive_minimum else "minimum"
            result[key] = spec.minimum
        if spec.maximum is not None:
            result["maximum"] = spec.maximum
    result["default"] = spec.default
    if spec.doc:
        result["description"] = spec.doc
    return result


def job_schema() -> dict[str, Any]:
    identifier = {"type": "string", "pattern": IDENTIFIER.pattern, "not": {"enum": [".", ".."]}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://rovertrain.dev/schemas/job.schema.json",
        "title": "rovertrain job",
        "type": "object",
        "additionalProperties": False,
        "required": ["root"],
        "properties": {
            "root": {"type": "string", "minLength": 1, "description": "data root folder"},
            "sessions": {
                "type": "array",
                "items": identifier,
                "uniqueItems": True,
                "description": "sessions to use, in any order; absent: every session folder "
                "under root/recordings, in sorted order",
            },
            "actionThreshold": {
                "type": "number",
                "exclusiveMinimum": 0,
                "exclusiveMaximum": 1,
                "default": 0.5,
            },
            "steeringDeadband": _field("steeringDeadband", STEERING_DEADBAND),
            "jobId": identifier,
            "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1, "default": 0},
            "config": {
                "type": "object",
                "additionalProperties": False,
                "properties": {name: _field(name, spec) for name, spec in CONFIG_FIELDS.items()},
            },
            "gate": {
                "type": "object",
                "additionalProperties": False,
                "properties": {name: _field(name, spec) for name, spec in GATE_FIELDS.items()},
            },
        },
    }


if __name__ == "__main__":
    print(json.dumps(job_schema(), indent=2))
