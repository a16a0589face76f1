"""`root/training/current.json`: which checkpoint to load (the last promoted one).

Written on promotion, atomically (temp file, fsync, rename, fsync of the folder), so a reader
sees the old pointer or the new one. It names the checkpoint by id and records the sha256 of
its `model.json`; a reader verifies the target (files, id, that hash) and reports a missing or
altered target instead of following it. The path is always `checkpoints/<id>`: a pointer
cannot lead outside the checkpoints folder.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from rovertrain.contracts.identifiers import valid_identifier
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.store.catalogue import verify_checkpoint
from rovertrain.store.durable import atomic_replace
from rovertrain.store.layout import METADATA_FILE, Layout

FORMAT = "rovertrain-current/1"


def current_path(root: Path) -> Path:
    return Layout(root).current


def write_current(root: Path, model_id: str, name: str | None) -> JsonObject:
    """Point current.json at a published checkpoint; returns the document written."""
    directory = Layout(root).checkpoint(model_id)
    document: JsonObject = {
        "format": FORMAT,
        "id": model_id,
        "name": name,
        "path": f"checkpoints/{model_id}",
        "modelJsonSha256": hashlib.sha256((directory / METADATA_FILE).read_bytes()).hexdigest(),
        "promotedAt": int(time.time() * 1000),
    }
    text = json.dumps(document, indent=2).encode() + b"\n"
    atomic_replace(current_path(root), text)
    return document


def read_current(root: Path) -> tuple[JsonObject | None, Path | None, list[str]]:
    """(pointer, verified checkpoint folder, problems); the folder is None unless it verifies."""
    path = current_path(root)
    try:
        document: JsonValue = json.loads(path.read_bytes())
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
    except FileNotFoundError:
        return None, None, ["no current.json: no checkpoint has been promoted yet"]
    except (OSError, ValueError) as error:
        return None, None, [f"current.json unreadable: {error}"]
    model_id = document.get("id")
    if not valid_identifier(model_id):
        return document, None, [f"current.json names an unsafe id {model_id!r}"]
    if document.get("path") != f"checkpoints/{model_id}":
        return (
            document,
            None,
            [f"current.json path {document.get('path')!r} is not checkpoints/<id>"],
        )
    directory = Layout(root).checkpoint(model_id)
    if directory.is_symlink() or not directory.is_dir():
        return document, None, [f"the target checkpoint {model_id} is missing"]
    _, problems = verify_checkpoint(directory)
    if not problems:
        digest = hashlib.sha256((directory / METADATA_FILE).read_bytes()).hexdigest()
        if digest != document.get("modelJsonSha256"):
            problems.append("model.json sha256 differs from the one current.json recorded")
    return document, (None if problems else directory), problems
