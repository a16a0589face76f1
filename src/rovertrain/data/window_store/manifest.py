"""The window store's manifest: one row per ingested session, so a job knows the whole store
without opening a session.

The store is `training/cache/`: each ingested session's frames exactly as the rover's
`prepare_frame` makes them (`<entry>.frames`, raw uint8, memory-mapped) beside their ticks
(`<entry>.json`); labels are recomputed from the command log whenever a session is read. The
manifest, `training/cache/manifest.parquet`, holds what a job needs to choose which sessions to
read and to report on the rest: counts per window category, the command types (the schema),
who drove, the rover, when it was ingested and whether its frames were dropped for the budget.

Parquet through pyarrow (docs/performance.md, "The window store"): a standard columnar file
that any tool (pandas, polars, DuckDB) opens to study a fleet's footage, written whole and
renamed into place, so a reader sees the previous manifest or the next, never a mix.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from rovertrain.contracts.command_schema import Schema, extended
from rovertrain.data.field import FieldFigures
from rovertrain.store.durable import replacing
from rovertrain.store.layout import Layout

MANIFEST_VERSION = 1
"""Bumped when a column's meaning changes; a manifest of another version is rebuilt."""


@dataclass(frozen=True)
class ManifestRow:
    """One ingested session: what the store holds of it and what choosing it needs."""

    session_id: str
    entry: str  # the store entry's name (`<entry>.frames`, `<entry>.json`)
    fingerprint: str  # the recording's files as last seen (`fingerprint`)
    video: str  # the recording's file names, to fingerprint it again without reading it
    commands: str
    held_out: bool
    windows: int
    usable_none: int  # usable windows per category (data.windows: none, command, stop)
    usable_command: int
    usable_stop: int
    rover_id: str
    control_profile: str | None
    driven_by: str | None
    supervised_windows: int
    autonomous_windows: int
    take_overs: int
    command_types: str  # JSON [[type, [value names]], ...] in first-seen order
    command_roles: str  # JSON {type: role} from session.json
    generation: int  # the manifest generation that ingested it: older is smaller
    entry_bytes: int
    dropped: bool = False  # frames removed to honour the store budget (`cacheMaxMegabytes`)

    @property
    def usable(self) -> int:
        return self.usable_none + self.usable_command + self.usable_stop

    def field_figures(self) -> FieldFigures | None:
        """How a policy drove this session under supervision (None: a person drove it all)."""
        if not self.supervised_windows and not self.take_overs:
            return None
        return FieldFigures.of_windows(
            self.supervised_windows, self.autonomous_windows, self.take_overs
        )

    def extend(self, schema: Schema) -> Schema:
        """`schema` with this session's command types appended (as if its log were read)."""
        return extend_with(schema, self.command_types, self.command_roles)


@dataclass(frozen=True)
class Manifest:
    generation: int  # how many times the manifest was written
    rows: Mapping[str, ManifestRow]

    def next_generation(self) -> int:
        return self.generation + 1


EMPTY = Manifest(0, {})


def manifest_path(root: Path) -> Path:
    return Layout(root).window_store / "manifest.parquet"


def fingerprint(directory: Path, names: Iterable[str]) -> str | None:
    """The size, modification time and inode of a recording's files: a changed file is a
    changed recording, re-ingested. None when one cannot be read (the job reads the session
    then and reports why)."""
    parts = []
    folder = os.fspath(directory)
    for name in ("session.json", *names):
        try:
            info = os.lstat(os.path.join(folder, name))
        except OSError:
            return None
        parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def extend_with(schema: Schema, command_types: str, command_roles: str) -> Schema:
    """`schema` with the command types of `command_types_json` appended (`extended`)."""
    types: list[tuple[str, list[str]]] = json.loads(command_types)
    roles: dict[str, str] = json.loads(command_roles)
    return extended(schema, ((kind, dict.fromkeys(names, 0.0)) for kind, names in types), roles)


def command_types_json(pairs: Iterable[tuple[str, Iterable[str]]]) -> str:
    """Command types with their value names, in first-seen order, merged per type."""
    seen: dict[str, list[str]] = {}
    for kind, values in pairs:
        names = seen.setdefault(kind, [])
        names.extend(name for name in values if name not in names)
    return json.dumps([[kind, names] for kind, names in seen.items()])


_COLUMNS = tuple(item.name for item in fields(ManifestRow))


def read_manifest(root: Path) -> Manifest:
    """The manifest, or EMPTY when there is none, or it is unreadable or of another version
    (then every session is ingested again: from the store's entries where they are valid)."""
    import pyarrow.parquet as pq

    path = manifest_path(root)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError):
        return EMPTY
    metadata = table.schema.metadata or {}
    try:
        version = int(metadata.get(b"rovertrain.manifestVersion", b"0"))
        generation = int(metadata.get(b"rovertrain.generation", b"0"))
    except ValueError:
        return EMPTY
    if version != MANIFEST_VERSION or tuple(table.column_names) != _COLUMNS:
        return EMPTY
    columns = table.to_pydict()
    rows = {
        str(values[0]): ManifestRow(*values)
        for values in zip(*(columns[name] for name in _COLUMNS), strict=True)
    }
    return Manifest(generation, rows)


def write_manifest(root: Path, generation: int, rows: Sequence[ManifestRow]) -> None:
    """Write the manifest whole, fsync it and rename it into place."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: [getattr(row, name) for row in rows] for name in _COLUMNS}
    # Each column's Arrow type from the record's annotation: the fields are declared once.
    arrow = {"str": pa.string(), "str | None": pa.string(), "int": pa.int64(), "bool": pa.bool_()}
    schema = pa.schema(
        [(item.name, arrow[str(item.type)]) for item in fields(ManifestRow)],
        metadata={
            "rovertrain.manifestVersion": str(MANIFEST_VERSION),
            "rovertrain.generation": str(generation),
        },
    )
    table = pa.Table.from_pydict(columns, schema=schema)
    path = manifest_path(root)
    with replacing(path, durable=True) as temporary:
        pq.write_table(table, temporary)
