"""Donkeycar tub v2, read from its text: the manifest, catalog lines, which records are human.

The format (donkeycar/parts/datastore_v2.py and tub_v2.py in autorope/donkeycar):

- `manifest.json`: five JSON lines: the inputs (record keys), their types, user metadata,
  manifest metadata (`created_at`, `sessions`), and catalog metadata (`paths` of the catalog
  files in order, `current_index`, `max_len`, `deleted_indexes`);
- `catalog_<n>.catalog`: one JSON object per line (CRLF), each record with `_index`,
  `_timestamp_ms`, `_session_id` (newer tubs) and the inputs, e.g. `cam/image_array` (a JPEG
  file name under `images/`), `user/angle`, `user/throttle`, `user/mode`;
- `catalog_<n>.catalog_manifest`: that catalog's `start_index` and line lengths (not needed to
  read the lines, so not relied on).

Pure functions: bytes in, records or drop reasons out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

import orjson

from rovertrain.contracts.strict_json import BadJson, parse_json

IMAGE_KEY = "cam/image_array"
ANGLE_KEY = "user/angle"
THROTTLE_KEY = "user/throttle"
MODE_KEY = "user/mode"
HUMAN_MODE = "user"
"""Donkeycar's drive modes: `user` (the human steers and throttles), `local_angle` (the pilot
steers) and `local` (the pilot drives). Only `user` records are the human's."""


class BadTub(Exception):
    """A tub that cannot be read at all (its manifest); the message says why."""


@dataclass(frozen=True)
class Manifest:
    inputs: list[str]
    created_at: float | None
    catalog_paths: list[str]
    current_index: int
    max_len: int
    deleted_indexes: frozenset[int]


@dataclass(frozen=True)
class TubRecord:
    index: int
    timestamp_ms: float
    session: str
    """Donkeycar's `_session_id` (one per drive start), "" in tubs older than it."""
    image: str
    angle: float
    throttle: float
    mode: str | None


def _number(value: object) -> TypeGuard[int | float]:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(float(value))
    )


def parse_manifest(data: bytes) -> Manifest:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadTub("manifest.json is not UTF-8") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 5:
        raise BadTub(f"manifest.json has {len(lines)} of its 5 lines")
    try:
        inputs, _types, _metadata, manifest_meta, catalog_meta = (
            parse_json(line) for line in lines[:5]
        )
    except BadJson as error:
        raise BadTub(f"manifest.json: {error}") from None
    if not isinstance(inputs, list) or not all(isinstance(name, str) for name in inputs):
        raise BadTub("manifest.json: line 1 (inputs) is not a list of names")
    if not isinstance(catalog_meta, dict):
        raise BadTub("manifest.json: line 5 (catalog metadata) is not an object")
    paths = catalog_meta.get("paths")
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise BadTub("manifest.json: catalog paths are not a list of file names")
    deleted = catalog_meta.get("deleted_indexes", [])
    if not isinstance(deleted, list) or not all(
        isinstance(index, int) and not isinstance(index, bool) for index in deleted
    ):
        raise BadTub("manifest.json: deleted_indexes is not a list of integers")
    current = catalog_meta.get("current_index", 0)
    max_len = catalog_meta.get("max_len", 1000)
    if not isinstance(current, int) or not isinstance(max_len, int) or max_len < 1:
        raise BadTub("manifest.json: current_index and max_len must be integers")
    created = manifest_meta.get("created_at") if isinstance(manifest_meta, dict) else None
    return Manifest(
        inputs=inputs,
        created_at=float(created) if _number(created) else None,
        catalog_paths=paths,
        current_index=current,
        max_len=max_len,
        deleted_indexes=frozenset(deleted),
    )


def parse_record(line: bytes) -> TubRecord | str:
    """One catalog line as a record, or the reason it is dropped (`invalid_record`)."""
    try:
        # orjson: strict UTF-8 and JSON (no NaN), and fast; a tub has a record per frame.
        item = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "invalid_record"
    if not isinstance(item, dict):
        return "invalid_record"
    index, stamp = item.get("_index"), item.get("_timestamp_ms")
    image = item.get(IMAGE_KEY)
    angle, throttle = item.get(ANGLE_KEY, 0.0), item.get(THROTTLE_KEY, 0.0)
    mode, session = item.get(MODE_KEY), item.get("_session_id", "")
    if not isinstance(index, int) or isinstance(index, bool) or not _number(stamp):
        return "invalid_record"
    if not isinstance(image, str) or not _number(angle) or not _number(throttle):
        return "invalid_record"
    if (mode is not None and not isinstance(mode, str)) or not isinstance(session, str):
        return "invalid_record"
    return TubRecord(index, float(stamp), session, image, float(angle), float(throttle), mode)


def is_human(record: TubRecord) -> bool:
    """The human drove this record. Tubs recorded without `user/mode` only ever had a human."""
    return record.mode is None or record.mode == HUMAN_MODE


def expected_records(manifest: Manifest, catalog: int) -> int:
    """How many records catalog number `catalog` should hold (for counting a lost catalog)."""
    start = catalog * manifest.max_len
    return max(0, min(manifest.max_len, manifest.current_index - start))
