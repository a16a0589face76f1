"""`rovertrain models`: one `model` event and one line on stderr per published checkpoint."""

from __future__ import annotations

from pathlib import Path

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.field import FieldFigures
from rovertrain.protocol.console import console_line
from rovertrain.protocol.events import EventStream
from rovertrain.store.catalogue import ModelRecord, catalogue, field_of, field_reports


def describe(record: ModelRecord, field: JsonObject | None) -> str:
    state = "ok" if record.valid else "INVALID: " + "; ".join(record.problems)
    line = (
        f"{record.id}  {record.name or '?':<28} steps={record.steps} "
        f"{record.evaluation}  promote={record.promote}{'  canary' if record.canary else ''}"
        f"  {state}"
    )
    return line if field is None else f"{line}\n    {FieldFigures.of_event(field).words()}"


def list_models(root_text: str, stream: EventStream) -> int:
    """Every checkpoint, and how it drove under supervision where a later model.json says."""
    root = Path(root_text).resolve()
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    records = catalogue(root)
    reports = field_reports(records)
    for record in records:
        fields = record.event_fields()
        field = field_of(reports, record.id)
        if field is not None:
            fields["field"] = field
        stream.emit("model", **fields)
        console_line(describe(record, field))
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
