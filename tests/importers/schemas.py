"""Imported recordings must match the published recording schemas."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from conftest import REPO

SESSION = Draft202012Validator(json.loads((REPO / "schemas" / "session.schema.json").read_text()))
COMMAND = Draft202012Validator(json.loads((REPO / "schemas" / "command.schema.json").read_text()))


def check_recording(folder: Path) -> None:
    SESSION.validate(json.loads((folder / "session.json").read_text()))
    for line in (folder / "commands.ndjson").read_text().splitlines():
        COMMAND.validate(json.loads(line))
