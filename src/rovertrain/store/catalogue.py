"""The catalogue of published checkpoints, each verified file by file (no output here)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.store.layout import METADATA_FILE, Layout


def verify_checkpoint(directory: Path) -> tuple[JsonObject, list[str]]:
    """(model.json content, problems); no problems means every file matches its record."""
    problems: list[str] = []
    try:
        meta: JsonValue = json.loads((directory / METADATA_FILE).read_text())
        if not isinstance(meta, dict):
            raise TypeError("model.json is not an object")
        files = meta["files"]
        if not isinstance(files, dict):
            raise ValueError("files is not an object")
    except (OSError, ValueError, KeyError, TypeError) as error:
        return {}, [f"model.json unreadable: {error}"]
    present = {path.name for path in directory.iterdir()}
    for name in sorted(present - set(files) - {METADATA_FILE}):
        problems.append(f"unlisted file {name}")
    for name, record in files.items():
        path = directory / name
        if "/" in name or not path.is_file() or path.is_symlink():
            problems.append(f"{name} missing")
            continue
        if not isinstance(record, dict):
            problems.append(f"{name} has no size and sha256 record")
            continue
        data = path.read_bytes()
        if len(data) != record.get("bytes"):
            problems.append(f"{name} has {len(data)} bytes, expected {record.get('bytes')}")
        elif hashlib.sha256(data).hexdigest() != record.get("sha256"):
            problems.append(f"{name} sha256 mismatch")
    if meta.get("id") != directory.name:
        problems.append("id does not match the folder name")
    return meta, problems


@dataclass(frozen=True)
class ModelRecord:
    """One published checkpoint as the catalogue found it (values from its model.json)."""

    id: str
    name: str | None
    created_at: int | None
    steps: int | None
    evaluation: str | None
    f1: float | None
    promote: bool | None
    valid: bool
    problems: tuple[str, ...]
    files: tuple[str, ...]
    canary: bool = False  # published as a canary (publication.canary): awaiting the field
    field_reports: Mapping[str, JsonObject] = field(default_factory=dict)  # its model.json's
    # `field`: how the models that drove its supervised sessions did

    def event_fields(self) -> JsonObject:
        """The fields of its `model` event."""
        return {
            "id": self.id,
            "name": self.name,
            "createdAt": self.created_at,
            "steps": self.steps,
            "evaluation": self.evaluation,
            "f1": self.f1,
            "promote": self.promote,
            "valid": self.valid,
            "problems": list(self.problems),
            **({"canary": True} if self.canary else {}),
        }


def catalogue(root: Path) -> list[ModelRecord]:
    """Every published checkpoint under `root`, verified file by file, oldest first."""
    directory = Layout(root).checkpoints
    records: list[ModelRecord] = []
    if not directory.is_dir():
        return records
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or not path.is_dir() or path.is_symlink():
            continue
        meta, problems = verify_checkpoint(path)
        validation = meta.get("validation")
        files = meta.get("files")
        publication = meta.get("publication")
        records.append(
            ModelRecord(
                id=path.name,
                name=_text(meta.get("name")),
                created_at=_integer(meta.get("createdAt")),
                steps=_integer(meta.get("trainingSteps")),
                evaluation=_text(meta.get("evaluation")),
                f1=_number(validation.get("f1")) if isinstance(validation, dict) else None,
                promote=_flag(meta.get("promote")),
                valid=not problems,
                problems=tuple(problems),
                files=tuple(files) if isinstance(files, dict) else (),
                canary=isinstance(publication, dict) and publication.get("canary") is True,
                field_reports=_reports(meta.get("field")),
            )
        )
    records.sort(key=lambda record: record.created_at or 0)
    return records


# What the catalogue shows of a model.json value of the wrong type: nothing (None).


def _reports(value: JsonValue | None) -> dict[str, JsonObject]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, dict)}


def field_reports(records: Sequence[ModelRecord]) -> dict[str, tuple[JsonObject, str]]:
    """Model id -> (how it drove in the field, the id of the model.json that says so): the
    newest report wins (the job behind it read the most supervised sessions)."""
    reports: dict[str, tuple[JsonObject, str]] = {}
    for record in records:  # oldest first
        for model_id, report in record.field_reports.items():
            reports[model_id] = (report, record.id)
    return reports


def field_of(reports: Mapping[str, tuple[JsonObject, str]], model_id: str) -> JsonObject | None:
    """A model's field report as events show it, with the model.json that says so
    (`reportedBy`); None: no later job reported how it drove."""
    found = reports.get(model_id)
    return None if found is None else {**found[0], "reportedBy": found[1]}


def _text(value: JsonValue | None) -> str | None:
    return value if isinstance(value, str) else None


def _integer(value: JsonValue | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: JsonValue | None) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _flag(value: JsonValue | None) -> bool | None:
    return value if isinstance(value, bool) else None
