"""The command schema: which command types the policy has a slot for, and their value names.

Pure functions only (no torch, no av). A schema is a list of slot dicts
`{"type": str, "values": [str, ...], "role": "stop" | "movement" | "other"}`; slots are only
ever appended, so a slot's index never changes meaning within a policy version.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypedDict, cast

SLOTS = 8
"""Most command types one policy can act on."""
VALUES = 4
"""Most numeric values per command type."""
ROLES = ("stop", "movement", "other")
MOTION_ROLES = ("stop", "movement")
"""The roles of the commands that decide whether and how the rover moves (one at a time)."""
DEFAULT_ROLES = {"stop": "stop", "drive": "movement"}

Role = Literal["stop", "movement", "other"]

CHANGE_TOLERANCE = 0.05
"""A command whose values all lie within this of the last command of its type is a re-send
(training's change/re-send split, and the runtime's re-send rule)."""

HUMAN, POLICY = "human", "policy"
SENDERS = (HUMAN, POLICY)
"""Who sent a command (`by` on a command-log line; absent: a person). A policy's commands are
part of the state it sees, never what training imitates (docs/recording-format.md)."""


class Slot(TypedDict):
    """One command type the policy acts on (a JSON object in model.json and the resume file)."""

    type: str
    values: list[str]
    role: Role


Schema = list[Slot]


def initial_schema() -> Schema:
    return [
        {"type": "stop", "values": [], "role": "stop"},
        {"type": "drive", "values": ["speed", "turn"], "role": "movement"},
    ]


def role_of(command_type: str, roles: Mapping[str, str] | None) -> Role:
    role = roles.get(command_type) if roles else None
    role = role or DEFAULT_ROLES.get(command_type, "other")
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    return cast(Role, role)


def slot_index(schema: Schema) -> dict[str, int]:
    return {slot["type"]: index for index, slot in enumerate(schema)}


def is_stop(slot: Slot) -> bool:
    return slot["role"] == "stop"


def extended(
    schema: Schema,
    commands: Iterable[tuple[str, Mapping[str, float]]],
    roles: Mapping[str, str] | None,
) -> Schema:
    """A copy of `schema` with new command types and value names appended, up to capacity.

    Types or values beyond SLOTS / VALUES stay unsupported and are counted by the caller.
    """
    result = copy.deepcopy(schema)
    index = slot_index(result)
    for command_type, values in commands:
        if command_type not in index:
            if len(result) >= SLOTS:
                continue
            index[command_type] = len(result)
            result.append(
                {"type": command_type, "values": [], "role": role_of(command_type, roles)}
            )
        slot = result[index[command_type]]
        for name in values:
            if name not in slot["values"] and len(slot["values"]) < VALUES:
                slot["values"].append(name)
    return result


def validate_schema(schema: Any) -> Schema:
    """Check a schema read back from a resume file; raise ValueError when it is not one."""
    if not isinstance(schema, list) or not 1 <= len(schema) <= SLOTS:
        raise ValueError("schema must be a list of 1..SLOTS slots")
    for slot in schema:
        if (
            not isinstance(slot, dict)
            or not isinstance(slot.get("type"), str)
            or slot.get("role") not in ROLES
            or not isinstance(slot.get("values"), list)
            or len(slot["values"]) > VALUES
            or not all(isinstance(name, str) for name in slot["values"])
        ):
            raise ValueError(f"malformed schema slot {slot!r}")
    return cast(Schema, schema)
