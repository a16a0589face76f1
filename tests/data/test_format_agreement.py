"""One source of truth per format: the loader and the shipped schemas give the same verdict.

A corpus of valid and invalid `session.json` documents and command lines (and generated ones)
goes through the loader (`load_recording`, `parse_command_log`) and through `jsonschema`
(Draft 2020-12, with ECMA-262 `$`). Documents breaking a JSON text rule that a schema cannot
express (docs/recording-format.md, "JSON text") must be refused by the loader.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators

from conftest import REPO
from rovertrain.contracts.errors import SkipSession
from rovertrain.data.recording import (
    MAX_JSON_DEPTH,
    MAX_TIME_MS,
    load_recording,
    parse_command_log,
)
from rovertrain.job.config import valid_identifier

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """`pattern` as ECMA-262 reads it: `$` (unlike Python's) does not match before a final LF."""
    if validator.is_type(instance, "string"):
        translated = pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern
        if not re.search(translated, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = validators.extend(Draft202012Validator, {"pattern": ecma_pattern})


def schema(name: str) -> Any:
    document = json.loads((REPO / "schemas" / name).read_text())
    Draft202012Validator.check_schema(document)
    return Validator(document)


SESSION = schema("session.schema.json")
COMMAND = schema("command.schema.json")


def text_rule_broken(value: Any, depth: int = 1) -> bool:
    """What the schemas cannot say: depth, numbers beyond a double, unpaired surrogates."""
    if isinstance(value, dict | list):
        if depth > MAX_JSON_DEPTH:
            return True
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        return any(text_rule_broken(item, depth + 1) for item in items)
    if isinstance(value, str):
        return any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int):
        return abs(value) > sys.float_info.max
    return False


def loader_accepts_session(document: Any, base: Path) -> bool:
    session_id = document.get("sessionId") if isinstance(document, dict) else None
    if not valid_identifier(session_id):
        session_id = "s1"  # the folder always has a safe name; sessionId must equal it
    directory = base / "recordings" / session_id
    directory.mkdir(parents=True)
    (directory / "session.json").write_text(json.dumps(document))
    for part in ("video", "commands"):  # whether the named files exist is not the question
        section = document.get(part) if isinstance(document, dict) else None
        name = section.get("file") if isinstance(section, dict) else None
        if isinstance(name, str) and NAME.fullmatch(name) and not (directory / name).exists():
            (directory / name).write_bytes(b"")
    try:
        load_recording(base, session_id)
    except SkipSession:
        return False
    return True


def loader_accepts_command(item: Any) -> bool:
    log = parse_command_log(json.dumps(item).encode())
    assert log.lines == 1
    return not log.invalid_lines


def check(document: Any, loader_says: bool, validator: Any) -> bool:
    if text_rule_broken(document):
        assert not loader_says, f"the loader accepts {document!r:.300}"
        return False
    schema_says = validator.is_valid(document)
    assert loader_says == schema_says, (
        f"loader {loader_says}, schema {schema_says}: {json.dumps(document)[:300]}"
    )
    return schema_says


BASE = {
    "format": "rovertrain-recording/1", "sessionId": "s1", "roverId": "rover-ash",
    "controlProfile": "gamepad", "startedAt": "2026-11-02T10:15:00Z",
    "video": {"file": "camera.webm", "offsetMs": 80}, "commands": {"file": "commands.ndjson"},
    "commandRoles": {"stop": "stop", "drive": "movement", "lights": "other"},
}  # fmt: skip
REQUIRED = {key: BASE[key] for key in ("format", "sessionId", "roverId", "video", "commands")}


def with_(**changes: Any) -> dict[str, Any]:
    document = {**BASE, **changes}
    return {key: value for key, value in document.items() if value is not DROP}


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


DROP = object()
SESSION_CORPUS: list[tuple[Any, bool]] = [
    (BASE, True),
    (REQUIRED, True),
    ({**REQUIRED, "video": {"file": "camera.webm"}}, True),
    (with_(controlProfile=None), True),
    (with_(controlProfile=""), True),
    (with_(controlProfile="p" * 256), True),
    (with_(roverId="r" * 256), True),
    (with_(roverId="\U0001f680" * 256), True),
    (with_(startedAt=nested(MAX_JSON_DEPTH - 1)), True),
    (with_(startedAt={"any": [None, 1.5, True, 10**300]}), True),
    (with_(extra={"ignored": "yes"}), True),
    (with_(video={"file": "camera.webm", "offsetMs": -60000}), True),
    (with_(video={"file": "camera.webm", "offsetMs": 60000.0}), True),
    (with_(video={"file": "camera.webm", "offsetMs": 0.25, "extra": 1}), True),
    (with_(video={"file": "c" * 128}), True),
    (with_(commandRoles={}), True),
    (with_(commandRoles={"": "other", "x" * 300: "stop"}), True),
    (with_(sessionId="S.1-_a"), True),
    (with_(format=DROP), False),
    (with_(sessionId=DROP), False),
    (with_(roverId=DROP), False),
    (with_(video=DROP), False),
    (with_(commands=DROP), False),
    (with_(format="rovertrain-recording/2"), False),
    (with_(format=None), False),
    (with_(sessionId="../s1"), False),
    (with_(sessionId=""), False),
    (with_(sessionId="s1\n"), False),
    (with_(sessionId=".s1"), False),
    (with_(sessionId=1), False),
    (with_(roverId=""), False),
    (with_(roverId="r" * 257), False),
    (with_(roverId=5), False),
    (with_(roverId=None), False),
    (with_(controlProfile="p" * 257), False),
    (with_(controlProfile=5), False),
    (with_(controlProfile=["gamepad"]), False),
    (with_(video=None), False),
    (with_(video=[]), False),
    (with_(video="camera.webm"), False),
    (with_(video={"offsetMs": 0}), False),
    (with_(video={"file": None}), False),
    (with_(video={"file": 3}), False),
    (with_(video={"file": "../camera.webm"}), False),
    (with_(video={"file": "/etc/passwd"}), False),
    (with_(video={"file": ".hidden"}), False),
    (with_(video={"file": ".."}), False),
    (with_(video={"file": "a/b"}), False),
    (with_(video={"file": "c" * 129}), False),
    (with_(video={"file": "camera.webm\n"}), False),
    (with_(video={"file": "camera.webm", "offsetMs": 60000.5}), False),
    (with_(video={"file": "camera.webm", "offsetMs": -60001}), False),
    (with_(video={"file": "camera.webm", "offsetMs": "80"}), False),
    (with_(video={"file": "camera.webm", "offsetMs": True}), False),
    (with_(video={"file": "camera.webm", "offsetMs": None}), False),
    (with_(commands=None), False),
    (with_(commands={}), False),
    (with_(commands={"file": "../../etc/passwd"}), False),
    (with_(commands={"file": ["commands.ndjson"]}), False),
    (with_(commandRoles=None), False),
    (with_(commandRoles=[]), False),
    (with_(commandRoles={"stop": "brake"}), False),
    (with_(commandRoles={"stop": None}), False),
    (with_(commandRoles={"stop": ["stop"]}), False),
    ([], False),
    ("session", False),
    (1, False),
    (None, False),
    # JSON text rules: beyond the schema, refused by the loader.
    (with_(startedAt=nested(MAX_JSON_DEPTH)), False),
    (with_(extra=10**400), False),
    (with_(extra=-(10**309)), False),
    (with_(roverId="rover\ud800"), False),
    (with_(extra={"\udfff": 1}), False),
]
GOOD_COMMAND = {"t": 1000, "type": "drive", "values": {"speed": 0.5, "turn": -0.1}}
COMMAND_CORPUS: list[tuple[Any, bool]] = [
    (GOOD_COMMAND, True),
    ({"t": 0, "type": "stop"}, True),
    ({"t": -5.5, "type": "stop", "values": None}, True),
    ({"t": 1, "type": "stop", "values": {}}, True),
    ({"t": MAX_TIME_MS, "type": "x"}, True),
    ({"t": -MAX_TIME_MS, "type": "x"}, True),
    ({"t": 1.5e15, "type": "x"}, True),
    ({"t": 1, "type": "t" * 64}, True),
    ({"t": 1, "type": "\U0001f697"}, True),
    ({"t": 1, "type": "a\u2028b\x00c"}, True),
    ({"t": 1, "type": "drive", "values": {f"v{i}": i for i in range(32)}}, True),
    ({"t": 1, "type": "drive", "values": {"n" * 64: 1, "": -1}}, True),
    ({"t": 1, "type": "drive", "values": {"speed": 1e308, "turn": -(10**300)}}, True),
    ({"t": 1, "type": "drive", "extra": {"deep": nested(MAX_JSON_DEPTH - 2)}}, True),
    ({"t": 1, "type": "drive", "extra": [None, "x", 10**308]}, True),
    ({"type": "drive"}, False),
    ({"t": 1}, False),
    ({}, False),
    ({"t": "1", "type": "drive"}, False),
    ({"t": True, "type": "drive"}, False),
    ({"t": None, "type": "drive"}, False),
    ({"t": [1], "type": "drive"}, False),
    ({"t": MAX_TIME_MS + 1, "type": "drive"}, False),
    ({"t": -MAX_TIME_MS - 1, "type": "drive"}, False),
    ({"t": 1e300, "type": "drive"}, False),
    ({"t": 10**300, "type": "drive"}, False),
    ({"t": 1, "type": ""}, False),
    ({"t": 1, "type": "t" * 65}, False),
    ({"t": 1, "type": 5}, False),
    ({"t": 1, "type": None}, False),
    ({"t": 1, "type": ["drive"]}, False),
    ({"t": 1, "type": "drive", "values": []}, False),
    ({**GOOD_COMMAND, "by": "policy"}, True),
    ({**GOOD_COMMAND, "by": "human"}, True),
    ({**GOOD_COMMAND, "by": "Policy"}, False),
    ({**GOOD_COMMAND, "by": None}, False),
    ({**GOOD_COMMAND, "by": ["policy"]}, False),
    ({"t": 1, "type": "drive", "values": "speed"}, False),
    ({"t": 1, "type": "drive", "values": 5}, False),
    ({"t": 1, "type": "drive", "values": True}, False),
    ({"t": 1, "type": "drive", "values": {f"v{i}": i for i in range(33)}}, False),
    ({"t": 1, "type": "drive", "values": {"n" * 65: 1}}, False),
    ({"t": 1, "type": "drive", "values": {"speed": "fast"}}, False),
    ({"t": 1, "type": "drive", "values": {"speed": True}}, False),
    ({"t": 1, "type": "drive", "values": {"speed": None}}, False),
    ({"t": 1, "type": "drive", "values": {"speed": [0.5]}}, False),
    ({"t": 1, "type": "drive", "values": {"speed": {"x": 1}}}, False),
    ([GOOD_COMMAND], False),
    ("drive", False),
    (1000, False),
    (None, False),
    # JSON text rules: beyond the schema, refused by the loader.
    ({"t": 1, "type": "drive", "values": {"speed": 10**400}}, False),
    ({"t": 1, "type": "drive", "extra": 10**400}, False),
    ({"t": 1, "type": "drive", "extra": nested(MAX_JSON_DEPTH)}, False),
    ({"t": 1, "type": "dr\udc00ive"}, False),
]


@pytest.mark.parametrize(("document", "valid"), SESSION_CORPUS)
def test_session_corpus(tmp_path: Path, document: Any, valid: bool) -> None:
    assert check(document, loader_accepts_session(document, tmp_path), SESSION) == valid


@pytest.mark.parametrize(("item", "valid"), COMMAND_CORPUS)
def test_command_corpus(item: Any, valid: bool) -> None:
    assert check(item, loader_accepts_command(item), COMMAND) == valid


LEAVES = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(10**310), max_value=10**310),
    st.integers(min_value=-(2**54), max_value=2**54),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3), st.text(min_size=60, max_size=70), st.text(min_size=250, max_size=260),
    st.sampled_from([
        "camera.webm", "commands.ndjson", "s1", "..", "a/b", "x\n", "\ud800", "stop", "movement",
        "other", "rovertrain-recording/1", "drive", "", 9007199254740991, -60000, 60000,
    ]),
)  # fmt: skip
KEYS = st.one_of(
    st.sampled_from(["t", "type", "values", "file", "offsetMs", "speed", "stop"]),
    st.text(max_size=3), st.text(min_size=63, max_size=66),
)  # fmt: skip
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(KEYS, inner, max_size=4)
    | st.dictionaries(st.text(min_size=1, max_size=3), st.floats(-2, 2), min_size=30, max_size=34)
    | st.builds(nested, st.integers(MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH + 1)),
    max_leaves=10,
)  # fmt: skip


def replaced(document: Any, path: list[Any], value: Any) -> Any:
    """`document` with the value at `path` (keys, or indices into its keys) replaced or removed."""
    if not path:
        return value
    if not isinstance(document, dict):
        return document
    key = path[0]
    if isinstance(key, int):
        key = list(document)[key % len(document)] if document else "x"
    result = dict(document)
    inner = replaced(result.get(key), path[1:], value)
    if inner is DROP:
        result.pop(key, None)
    else:
        result[key] = inner
    return result


def mutations(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    step = st.tuples(
        st.lists(st.integers(0, 9) | KEYS, min_size=1, max_size=2),
        VALUES | st.just(DROP),
    )
    return st.one_of(
        VALUES,
        st.lists(step, min_size=1, max_size=3).map(lambda steps: _apply(base, steps)),
    )


def _apply(base: dict[str, Any], steps: list[tuple[list[Any], Any]]) -> Any:
    document: Any = base
    for path, value in steps:
        document = replaced(document, path, value)
    return document


AGREEMENT = settings(
    max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def verdict(document: Any, valid: bool) -> str:
    return "text rule" if text_rule_broken(document) else "valid" if valid else "invalid"


@AGREEMENT
@given(document=mutations(BASE))
def test_generated_sessions_agree(tmp_path_factory: pytest.TempPathFactory, document: Any) -> None:
    accepted = loader_accepts_session(document, tmp_path_factory.mktemp("a"))
    event(verdict(document, check(document, accepted, SESSION)))


@AGREEMENT
@given(item=mutations(GOOD_COMMAND))
def test_generated_commands_agree(item: Any) -> None:
    event(verdict(item, check(item, loader_accepts_command(item), COMMAND)))
