"""`rovertrain models`: one `model` event and one line on stderr per published checkpoint."""

from __future__ import annotations

from pathlib import Path

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.protocol.console import console_line
from rovertrain.protocol.events import EventStream
from rovertrain.store.catalogue import ModelRecord, catalogue


def describe(record: ModelRecord) -> str:
    state = "ok" if record.valid else "INVALID: " + "; ".join(record.problems)
    return (
        f"{record.id}  {record.name or '?':<28} steps={record.steps} "
        f"{record.evaluation}  promote={record.promote}  {state}"
    )


def list_models(root_text: str, stream: EventStream) -> int:
    root = Path(root_text).resolve()
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    for record in catalogue(root):
        stream.emit("model", **record.event_fields())
        console_line(describe(record))
    return ExitCode.COMPLETED


def show_current(root_text: str, stream: EventStream) -> int:
    """`models --current`: the promoted checkpoint current.json points at, verified."""
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
