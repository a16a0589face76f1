"""Hostile recordings, in-process: every input is used, dropped by reason or skipped with a code.

The loader is called directly (no subprocess per example); tests/reliability/test_hostile.py
runs a whole job with such a session among good ones.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rovertrain.contracts.errors import SkipSession
from rovertrain.data.recording import (
    DROP_REASONS,
    MAX_COMMAND_LINE_BYTES,
    RecordingLimits,
    load_recording,
    parse_command_log,
    read_command_log,
)

SKIP_CODES = {"missing_recording", "unsafe_path", "invalid_recording", "too_large"}
GOOD_LOG = (
    b"".join(
        json.dumps({"t": t, "type": "drive", "values": {"speed": 0.5, "turn": -0.25}}).encode()
        + b"\n"
        for t in range(0, 3000, 100)
    )
    + b'{"t": 3000, "type": "stop"}\n{"t": 3100, "type": "lights", "values": null}\n'
)
GOOD_META = {
    "format": "rovertrain-recording/1", "sessionId": "s1", "roverId": "rover-ash",
    "controlProfile": "gamepad", "startedAt": "2026-11-02T10:15:00Z",
    "video": {"file": "camera.webm", "offsetMs": 80}, "commands": {"file": "commands.ndjson"},
    "commandRoles": {"stop": "stop", "drive": "movement", "lights": "other"},
}  # fmt: skip


def session(root: Path, meta: bytes | dict | None = None, log: bytes = GOOD_LOG) -> Path:
    directory = root / "recordings" / "s1"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "camera.webm").write_bytes(b"\x1a\x45\xdf\xa3")
    (directory / "commands.ndjson").write_bytes(log)
    document = GOOD_META if meta is None else meta
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    (directory / "session.json").write_bytes(raw)
    return directory


def outcome(root: Path, limits: RecordingLimits | None = None) -> tuple[str, object]:
    """("ok", CommandLog) or ("skip", code); anything else propagates and fails the test."""
    extra = {} if limits is None else {"limits": limits}
    try:
        recording = load_recording(root, "s1", **extra)
        log = read_command_log(recording, **extra)
    except SkipSession as skip:
        assert skip.code in SKIP_CODES, skip.code
        assert skip.reason and len(skip.reason) < 1000
        return "skip", skip.code
    assert sum(log.dropped.values()) == log.invalid_lines
    assert set(log.dropped) <= set(DROP_REASONS)
    return "ok", log


def dropped(line: bytes) -> dict[str, int]:
    return parse_command_log(GOOD_LOG + line + b"\n").dropped


DEEP = b"[" * 200_000 + b"]" * 200_000


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"t": 1' + b"0" * 400 + b', "type": "drive"}', "number_out_of_range"),
        (b'{"t": 1, "type": "drive", "values": {"speed": 1' + b"0" * 400 + b"}}", "number_out_of_range"),
        (b'{"t": 1, "type": "drive", "x": -' + b"9" * 5000 + b"}", "number_out_of_range"),
        (b'{"t": 1e400, "type": "drive"}', "number_out_of_range"),
        (b'{"t": 1, "type": "drive", "values": {"speed": -1e400}}', "number_out_of_range"),
        (b'{"t": 9007199254740992, "type": "drive"}', "invalid_command"),
        (b'{"t": 1e300, "type": "drive"}', "invalid_command"),
        (b'{"t": NaN, "type": "drive"}', "invalid_json"),
        (b'{"t": Infinity, "type": "drive"}', "invalid_json"),
        (b'{"t": 1, "type": "drive", "x": ' + DEEP[:100_000] + DEEP[-100_000:] + b"}", "too_long"),
        (b'{"t": 1, "type": "drive", "x": ' + b"[" * 40 + b"]" * 40 + b"}", "too_deep"),
        (b'{"t": 1, "type": "drive", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "too_deep"),
        (b'{"t": 1, "type": "drive", "x": "' + b"a" * (MAX_COMMAND_LINE_BYTES) + b'"}', "too_long"),
        (b'{"t": 1, "type": "dr\xffive"}', "invalid_utf8"),
        (b'{"t": 1, "type": "\xed\xa0\x80"}', "invalid_utf8"),
        (b'{"t": 1, "type": "dr\x00ive"}', "invalid_json"),
        (b'{"t": 1, "type": "drive"}\x00', "invalid_json"),
        (b'\xef\xbb\xbf{"t": 1, "type": "drive"}', "invalid_json"),  # a BOM only starts a file
        (b'{"t": 1, "type": "drive", "t": 2}', "duplicate_key"),
        (b'{"t": 1, "type": "drive", "values": {"a": 1, "a": 2}}', "duplicate_key"),
        (b'{"t": 1, "type": "\\ud800"}', "invalid_unicode"),
        (b'{"t": 1, "type": "drive", "values": {"\\udfff": 1}}', "invalid_unicode"),
        (b'{"t": 1, "type": "drive"} {"t": 2, "type": "drive"}', "invalid_json"),
        (b"[1, 2]", "invalid_command"),
        (b"null", "invalid_command"),
        (b'"drive"', "invalid_command"),
        (b'{"t": "1", "type": "drive"}', "invalid_command"),
        (b'{"t": true, "type": "drive"}', "invalid_command"),
        (b'{"t": null, "type": "drive"}', "invalid_command"),
        (b'{"type": "drive"}', "invalid_command"),
        (b'{"t": 1}', "invalid_command"),
        (b'{"t": 1, "type": ""}', "invalid_command"),
        (b'{"t": 1, "type": ["drive"]}', "invalid_command"),
        (b'{"t": 1, "type": "' + b"d" * 65 + b'"}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": []}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": {"speed": "fast"}}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": {"speed": false}}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": {"speed": null}}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": {"speed": [1]}}', "invalid_command"),
        (b'{"t": 1, "type": "drive", "values": {"' + b"n" * 65 + b'": 1}}', "invalid_command"),
        (
            b'{"t": 1, "type": "drive", "values": {'
            + b", ".join(b'"v%d": 0' % i for i in range(33)) + b"}}",
            "invalid_command",
        ),
        (b'{"t": 500, "type": "drive"}', "time_backwards"),
        (b'{"t": -5000, "type": "drive"}', "time_backwards"),
    ],
)  # fmt: skip
def test_bad_command_lines_are_dropped_by_reason(line: bytes, reason: str) -> None:
    assert dropped(line) == {reason: 1}


def test_accepted_oddities() -> None:
    text = (
        b'\xef\xbb\xbf{"t": -200, "type": "drive", "values": null}\r\n'
        b'{"t": -250.5, "type": "drive", "values": {"": 0.1}}\r\n'  # small disorder: kept
        b"   \r\n\n\t\n"
        b'{"t": 10, "type": "\\ud83d\\ude00", "extra": {"a": [1, {"b": 2}]}}\r\n'
        b'{"t": 20, "type": "drive", "values": {"speed": 1e308, "turn": -5}}\r\n'
        b'{"t": 30, "type": "drive", "values": {"speed": 1e-400}}'
    )
    log = parse_command_log(text)
    assert log.dropped == {} and log.lines == 5 and log.clipped_values == 1
    assert [c.t for c in log.commands] == [-250.5, -200, 10, 20, 30]
    assert log.commands[2].type == "\U0001f600"
    assert log.commands[3].values == {"speed": 1.0, "turn": -1.0}


def test_wide_lines_within_the_limit_are_fine() -> None:
    wide = {"t": 1, "type": "drive", **{f"k{i}": [i] for i in range(3000)}}
    values = {"t": 2, "type": "drive", "values": {f"v{i}": 0.5 for i in range(32)}}
    log = parse_command_log(f"{json.dumps(wide)}\n{json.dumps(values)}\n".encode())
    assert log.dropped == {} and len(log.commands[1].values) == 32


def test_line_separators_other_than_lf_do_not_split_lines() -> None:
    line = '{"t": 1, "type": "a\u2028b\u0085c\u2029d"}'
    log = parse_command_log(line.encode())
    assert log.lines == 1 and log.commands[0].type == "a\u2028b\u0085c\u2029d"


def test_a_huge_line_is_dropped_without_holding_it(tmp_path: Path) -> None:
    huge = b'{"t": 5, "type": "drive", "x": "' + b"a" * (8 << 20) + b'"}'
    session(tmp_path, log=GOOD_LOG + huge + b"\n" + b'{"t": 9000, "type": "stop"}\n' + huge)
    kind, log = outcome(tmp_path)
    assert kind == "ok" and log.dropped == {"too_long": 2}  # type: ignore[union-attr]
    assert log.commands[-1].t == 9000  # type: ignore[union-attr]


def test_limits_are_configurable(tmp_path: Path) -> None:
    session(tmp_path)
    assert outcome(tmp_path, RecordingLimits(session_json_bytes=100)) == ("skip", "too_large")
    assert outcome(tmp_path, RecordingLimits(command_log_bytes=100)) == ("skip", "too_large")
    assert outcome(tmp_path, RecordingLimits(commands=10)) == ("skip", "too_large")
    assert outcome(tmp_path, RecordingLimits(json_depth=1)) == ("skip", "invalid_recording")
    assert outcome(tmp_path, RecordingLimits(command_line_bytes=40)) == (
        "skip",
        "invalid_recording",
    )
    log = parse_command_log(GOOD_LOG, RecordingLimits(command_line_bytes=40))
    assert log.dropped == {"too_long": 31} and log.lines == 32
    session(tmp_path, log=b"".join(b'{"t": %d, "type": "stop"}\n' % t for t in range(5000)))
    kind, log = outcome(tmp_path, RecordingLimits(commands=5000))
    assert kind == "ok" and log.lines == 5000


def test_mostly_invalid_log_skips(tmp_path: Path) -> None:
    session(tmp_path, log=b'{"t": 1, "type": "stop"}\n' + b"\xff\n" * 2)
    assert outcome(tmp_path) == ("skip", "invalid_recording")
    session(tmp_path, log=b"")
    kind, log = outcome(tmp_path)
    assert kind == "ok" and log.commands == []  # type: ignore[union-attr]


def meta_text(**changes: object) -> bytes:
    return json.dumps({**GOOD_META, **changes}).encode()


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "invalid_recording"),
        (meta_text(startedAt=json.loads("[" * 40 + "]" * 40)), "invalid_recording"),
        (meta_text()[:-1] + b', "x": ' + b"{" * 900 + b"}" * 900 + b"}", "invalid_recording"),
        (meta_text()[:-1] + b', "x": 1' + b"0" * 400 + b"}", "invalid_recording"),
        (meta_text()[:-1] + b', "x": 1e400}', "invalid_recording"),
        (meta_text()[:-1] + b', "x": NaN}', "invalid_recording"),
        (meta_text()[:-1] + b', "roverId": "again"}', "invalid_recording"),
        (meta_text()[:-1] + b', "x": "\\udc00"}', "invalid_recording"),
        (meta_text(roverId="r").replace(b'"r"', b'"r\xff"'), "invalid_recording"),
        (meta_text() + b"\x00", "invalid_recording"),
        (b"\x00" * 100, "invalid_recording"),
        (b"", "invalid_recording"),
        (meta_text(x="y" * (1 << 20)), "too_large"),
        (meta_text(x={f"k{i}": i for i in range(50_000)}), "ok"),
        (meta_text(video={"file": "camera.webm", "offsetMs": 10**400}), "invalid_recording"),
        (meta_text(video={"file": "camera.webm", "offsetMs": 60001}), "invalid_recording"),
        (meta_text(video={"file": "camera.webm", "offsetMs": True}), "invalid_recording"),
        (meta_text(video={"file": "camera.webm", "offsetMs": None}), "invalid_recording"),
        (meta_text(video={"offsetMs": 0}), "invalid_recording"),
        (meta_text(video={"file": 7}), "invalid_recording"),
        (meta_text(video="camera.webm"), "invalid_recording"),
        (meta_text(video={"file": "../s2/camera.webm"}), "unsafe_path"),
        (meta_text(video={"file": "/dev/zero"}), "unsafe_path"),
        (meta_text(video={"file": ".."}), "unsafe_path"),
        (meta_text(video={"file": "cam\x00era.webm"}), "unsafe_path"),
        (meta_text(commands={"file": "../../../etc/passwd"}), "unsafe_path"),
        (meta_text(commands=None), "invalid_recording"),
        (meta_text(commands=[]), "invalid_recording"),
        (meta_text(roverId=["r"]), "invalid_recording"),
        (meta_text(roverId="r" * 257), "invalid_recording"),
        (meta_text(controlProfile=3), "invalid_recording"),
        (meta_text(controlProfile="p" * 257), "invalid_recording"),
        (meta_text(sessionId=None), "invalid_recording"),
        (meta_text(format=None), "invalid_recording"),
        (meta_text(commandRoles=None), "invalid_recording"),
        (meta_text(commandRoles={"stop": ["stop"]}), "invalid_recording"),
        (meta_text(commandRoles={"stop": {"a": 1}}), "invalid_recording"),
        (b"[]", "invalid_recording"),
        (b"null", "invalid_recording"),
        (b'"rovertrain-recording/1"', "invalid_recording"),
        (b"\xef\xbb\xbf" + meta_text(), "ok"),
        (json.dumps(GOOD_META, indent=2).replace("\n", "\r\n").encode(), "ok"),
        (meta_text(controlProfile=None, commandRoles={}, startedAt={"a": [None, 1.5]}), "ok"),
    ],
)  # fmt: skip
def test_hostile_session_json(tmp_path: Path, raw: bytes, code: str) -> None:
    session(tmp_path, raw)
    kind, detail = outcome(tmp_path)
    assert (kind if kind == "ok" else detail) == code


def test_files_that_are_not_regular_files(tmp_path: Path) -> None:
    directory = session(tmp_path)
    log = directory / "commands.ndjson"
    meta = directory / "session.json"

    def replaced(path: Path, make) -> str:
        saved = path.read_bytes()
        path.unlink()
        make(path)
        try:
            kind, detail = outcome(tmp_path)
            return str(detail) if kind == "skip" else "ok"
        finally:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
            path.write_bytes(saved)

    for path in (log, meta):
        assert replaced(path, os.mkfifo) == "unsafe_path"  # and does not block
        assert replaced(path, lambda p: p.symlink_to("/dev/zero")) == "unsafe_path"
        assert replaced(path, lambda p: p.symlink_to(p.with_name("camera.webm"))) == "unsafe_path"
        assert replaced(path, lambda p: p.symlink_to(p.with_name("loop"))) == "unsafe_path"
        assert replaced(path, Path.mkdir) == "unsafe_path"
        assert replaced(path, bind_socket) == "unsafe_path"
    try:
        os.mknod(tmp_path / "probe", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        pass  # no CAP_MKNOD here
    else:
        os.unlink(tmp_path / "probe")
        zero = lambda p: os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # noqa: E731
        assert replaced(log, zero) == "unsafe_path"
        assert replaced(meta, zero) == "unsafe_path"
    assert replaced(log, lambda p: None) == "invalid_recording"  # missing


def bind_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def test_a_file_swapped_for_a_fifo_after_the_check_does_not_block(tmp_path: Path) -> None:
    directory = session(tmp_path)
    recording = load_recording(tmp_path, "s1")
    (directory / "commands.ndjson").unlink()
    os.mkfifo(directory / "commands.ndjson")
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(outcome_of(recording)), daemon=True)
    worker.start()
    worker.join(10)
    assert result == ["unsafe_path"]
    (directory / "commands.ndjson").unlink()
    (directory / "commands.ndjson").symlink_to("/dev/zero")
    assert outcome_of(recording) == "unsafe_path"


def outcome_of(recording) -> str:
    try:
        read_command_log(recording)
    except SkipSession as skip:
        return skip.code
    return "ok"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_skip(tmp_path: Path) -> None:
    directory = session(tmp_path)
    (directory / "commands.ndjson").chmod(0)
    assert outcome(tmp_path) == ("skip", "invalid_recording")
    (directory / "session.json").chmod(0)
    assert outcome(tmp_path) == ("skip", "invalid_recording")


# Property: mutated real command logs and session files are accepted or skipped with a code.

HOSTILE_SNIPPETS = [
    b"1" + b"0" * 400, b"1e400", b"-1e400", b"NaN", b"Infinity", b"[" * 3000, b"{" * 3000,
    b'"\\ud800"', b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\r\n", b"\r", b"\n", b'"t": 1, "t": 2',
    b"9007199254740993", b"true", b"null", b"[]", b"{}", b'"', b"\\", b"\xed\xa0\x80",
    b'"a' + b"b" * 70_000 + b'"', "\u2028".encode(),
]  # fmt: skip
JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=80),
    st.sampled_from(["camera.webm", "commands.ndjson", "..", "/etc/passwd", "stop", "movement",
                     "rovertrain-recording/1", "s1", "session.json"]),
)  # fmt: skip
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """Random byte-level damage: flips, insertions of hostile snippets, cuts, duplicates."""
    result = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(result)))
        action = draw(st.sampled_from(["flip", "insert", "snippet", "cut", "duplicate"]))
        if action == "flip" and result:
            index = min(position, len(result) - 1)
            result[index] = draw(st.integers(0, 255))
        elif action == "insert":
            result[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif action == "snippet":
            result[position:position] = draw(st.sampled_from(HOSTILE_SNIPPETS))
        elif action == "cut":
            del result[position : position + draw(st.integers(1, 64))]
        else:
            result[position:position] = result[position : position + draw(st.integers(1, 200))]
    return bytes(result)


def set_at(document: object, path: list, value: object) -> object:
    if not path:
        return value
    if isinstance(document, dict) and document:
        key = path[0] % len(document) if isinstance(path[0], int) else path[0]
        key = list(document)[key] if isinstance(key, int) else key
        return {**document, key: set_at(document.get(key), path[1:], value)}
    if isinstance(document, list) and document:
        index = path[0] % len(document) if isinstance(path[0], int) else 0
        return [*document[:index], set_at(document[index], path[1:], value), *document[index + 1 :]]
    return value


@st.composite
def mutated_meta(draw: st.DrawFn) -> bytes:
    """Structured damage: a value anywhere replaced by a random JSON value, or a key removed."""
    document: object = json.loads(json.dumps(GOOD_META))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.lists(st.integers(0, 20) | st.text(max_size=6), max_size=3))
        if draw(st.booleans()):
            document = set_at(document, path, draw(JSON_VALUES))
        elif isinstance(document, dict) and document:
            document = dict(document)
            document.pop(list(document)[draw(st.integers(0, len(document) - 1))])
    return json.dumps(document).encode()


@st.composite
def mutated_log(draw: st.DrawFn) -> bytes:
    """Structured damage to command lines: a field replaced by a random JSON value."""
    lines = GOOD_LOG.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        item = json.loads(lines[index])
        path = draw(st.lists(st.sampled_from(["t", "type", "values", "speed", "x"]), max_size=2))
        lines[index] = json.dumps(set_at(item, path, draw(JSON_VALUES))).encode()
    return b"\n".join(lines) + b"\n"


META_BYTES = json.dumps(GOOD_META, indent=2).encode()
FUZZ = settings(
    max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(
    meta=st.one_of(
        st.just(META_BYTES), st.just(META_BYTES), mutated_bytes(META_BYTES), mutated_meta()
    ),
    log=st.one_of(st.just(GOOD_LOG), mutated_bytes(GOOD_LOG), mutated_log()),
)
def test_mutated_sessions_are_accepted_or_skipped_with_a_code(
    tmp_path_factory: pytest.TempPathFactory, meta: bytes, log: bytes
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    session(root, meta, log)
    kind, detail = outcome(root)
    event(f"{kind} {detail if kind == 'skip' else sorted(detail.dropped)}")  # type: ignore[union-attr]
    if kind == "ok":
        assert all(-1 <= v <= 1 for c in detail.commands for v in c.values.values())  # type: ignore[union-attr]
