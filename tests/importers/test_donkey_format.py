"""Reading Donkeycar tub v2 text (pure)."""

from __future__ import annotations

import json

import pytest

from rovertrain.importers.donkey_format import (
    BadTub,
    TubRecord,
    expected_records,
    is_human,
    parse_manifest,
    parse_record,
)


def manifest(catalog: object, manifest_meta: object = None) -> bytes:
    lines = [["cam/image_array", "user/angle"], ["image_array", "float"], {},
             manifest_meta or {"created_at": 12.5}, catalog]  # fmt: skip
    return "".join(json.dumps(line) + "\r\n" for line in lines).encode()


def test_manifest_lines_are_read() -> None:
    catalog = {"paths": ["catalog_0.catalog"], "current_index": 1500, "max_len": 1000}
    parsed = parse_manifest(manifest({**catalog, "deleted_indexes": [3, 8]}))
    assert parsed.catalog_paths == ["catalog_0.catalog"]
    assert parsed.deleted_indexes == {3, 8}
    assert parsed.created_at == 12.5
    assert expected_records(parsed, 0) == 1000
    assert expected_records(parsed, 1) == 500
    assert expected_records(parsed, 2) == 0


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe",
        b"[]\n[]\n{}\n{}\n",
        manifest({"paths": "catalog_0.catalog"}),
        manifest({"paths": [], "deleted_indexes": ["3"]}),
        manifest({"paths": [], "max_len": 0}),
        b"[]\n[]\n{}\n{}\n{nope\n",
    ],
)
def test_unreadable_manifests_say_why(data: bytes) -> None:
    with pytest.raises(BadTub):
        parse_manifest(data)


def record(**fields: object) -> bytes:
    base = {"_index": 4, "_timestamp_ms": 1000, "_session_id": "s", "cam/image_array": "4.jpg",
            "user/angle": 0.1, "user/throttle": 0.3, "user/mode": "user"}  # fmt: skip
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not None}).encode()


def test_a_record_is_parsed() -> None:
    assert parse_record(record()) == TubRecord(4, 1000.0, "s", "4.jpg", 0.1, 0.3, "user")


@pytest.mark.parametrize(
    "line",
    [
        b'{"_index": 4, "_timestamp_ms": 10',  # truncated catalog
        b"\xff",
        b"[1]",
        record(_index="4"),
        record(_timestamp_ms=None),
        record(**{"user/angle": "left"}),
        record(**{"cam/image_array": None}),
        record(**{"user/mode": 3}),
        b'{"_index": 1, "_timestamp_ms": NaN}',
    ],
)
def test_bad_records_are_dropped_as_invalid(line: bytes) -> None:
    assert parse_record(line) == "invalid_record"


def test_only_user_mode_is_the_human() -> None:
    user = parse_record(record())
    assert isinstance(user, TubRecord) and is_human(user)
    for mode in ("local", "local_angle"):
        pilot = parse_record(record(**{"user/mode": mode}))
        assert isinstance(pilot, TubRecord) and not is_human(pilot)
    older = parse_record(record(**{"user/mode": None, "_session_id": None}))
    assert isinstance(older, TubRecord) and is_human(older) and older.session == ""
