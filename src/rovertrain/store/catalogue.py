"""`rovertrain models`: the published checkpoints, each verified file by file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rovertrain.errors import RovertrainError
from rovertrain.exitcodes import ExitCode
from rovertrain.protocol.events import EventStream
from rovertrain.store.publish import METADATA_FILE, checkpoints_dir


def verify_checkpoint(directory: Path) -> tuple[dict[str, Any], list[str]]:
    """(model.json content, problems); no problems means every file matches its record."""
    problems: list[str] = []
    try:
        meta = json.loads((directory / METADATA_FILE).read_text())
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
        data = path.read_bytes()
        if len(data) != record.get("bytes"):
            problems.append(f"{name} has {len(data)} bytes, expected {record.get('bytes')}")
        elif hashlib.sha256(data).hexdigest() != record.get("sha256"):
            problems.append(f"{name} sha256 mismatch")
    if meta.get("id") != directory.name:
        problems.append("id does not match the folder name")
    return meta, problems


def catalogue(root: Path) -> list[dict[str, Any]]:
    directory = checkpoints_dir(root)
    entries: list[dict[str, Any]] = []
    if not directory.is_dir():
        return entries
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or not path.is_dir() or path.is_symlink():
            continue
        meta, problems = verify_checkpoint(path)
        validation = meta.get("validation") or {}
        entries.append(
            {
                "id": path.name,
                "name": meta.get("name"),
                "createdAt": meta.get("createdAt"),
                "steps": meta.get("trainingSteps"),
                "evaluation": meta.get("evaluation"),
                "f1": validation.get("f1"),
                "promote": meta.get("promote"),
                "valid": not problems,
                "problems": problems,
            }
        )
    entries.sort(key=lambda entry: entry["createdAt"] or 0)
    return entries


def list_models(root_text: str, stream: EventStream) -> int:
    from rovertrain.cli.console import console_line

    root = Path(root_text).resolve()
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    for entry in catalogue(root):
        stream.emit("model", **entry)
        state = "ok" if entry["valid"] else "INVALID: " + "; ".join(entry["problems"])
        console_line(
            f"{entry['id']}  {entry['name'] or '?':<28} steps={entry['steps']} "
            f"{entry['evaluation']}  promote={entry['promote']}  {state}"
        )
    return ExitCode.COMPLETED


def show_current(root_text: str, stream: EventStream) -> int:
    """`models --current`: the promoted checkpoint current.json points at, verified."""
    from rovertrain.cli.console import console_line
    from rovertrain.store.current import read_current

    root = Path(root_text).resolve()
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    document, directory, problems = read_current(root)
    stream.emit("current", current=document, valid=directory is not None, problems=problems)
    if directory is not None and document is not None:
        console_line(f"current: {document['id']}  {document.get('name') or '?'}  {directory}")
    else:
        console_line("current: NOT USABLE: " + "; ".join(problems))
    return ExitCode.COMPLETED
