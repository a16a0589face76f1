"""The JSON Schemas that ship inside the package (the repository's `schemas/` is a link here)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_NAMES = ("events", "job", "session", "command", "model")


def load_schema(name: str) -> dict[str, Any]:
    """One shipped schema by name (`events`, `job`, `session`, `command`, `model`)."""
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    text = (resources.files("rovertrain") / "schemas" / f"{name}.schema.json").read_text()
    document: dict[str, Any] = json.loads(text)
    return document
