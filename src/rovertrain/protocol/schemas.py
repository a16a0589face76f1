"""The JSON Schemas that ship inside the package (the repository's `schemas/` is a link here)."""

from __future__ import annotations

import json
from importlib import resources

from rovertrain.contracts.json_types import JsonObject

SCHEMA_NAMES = ("events", "job", "session", "command", "model")


def load_schema(name: str) -> JsonObject:
    """One shipped schema by name (`events`, `job`, `session`, `command`, `model`)."""
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    text = (resources.files("rovertrain") / "schemas" / f"{name}.schema.json").read_text()
    document: JsonObject = json.loads(text)  # shipped with the package: an object
    return document
