from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, parse_events
from rovertrain.protocol.events import (
    REQUIRED_FIELDS,
    ContractViolation,
    EventStream,
    non_finite_path,
)


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_envelope_seq_and_one_line_per_event() -> None:
    read, write = os.pipe()
    stream = EventStream(write, strict=True)
    stream.bind_job("job-1")
    stream.emit("phase", phase="decode", elapsedSeconds=0.5)
    stream.emit("complete", trained=False, accepted=[], rejected={})
    os.close(write)
    events = parse_events(read_all(read))
    assert [e["kind"] for e in events] == ["phase", "complete"]
    assert [e["seq"] for e in events] == [0, 1]
    assert all(e["v"] == 1 and e["jobId"] == "job-1" and e["time"] > 0 for e in events)


def test_non_finite_value_becomes_internal_error_not_null() -> None:
    read, write = os.pipe()
    stream = EventStream(write, strict=False)
    stream.emit("complete", trained=True, accepted=[], rejected={}, loss=math.nan)
    os.close(write)
    (event,) = parse_events(read_all(read))
    assert event["kind"] == "error" and event["code"] == "internal"
    assert "/loss" in event["detail"]
    assert stream.terminal_written


def test_strict_mode_raises_on_contract_violation() -> None:
    stream = EventStream(None, strict=True)
    with pytest.raises(ContractViolation):
        stream.emit("progress", steps=1)
    with pytest.raises(ContractViolation):
        stream.emit("no-such-kind")


def test_nothing_after_the_terminal_event() -> None:
    stream = EventStream(None, strict=True)
    stream.emit("error", code="internal", message="x")
    with pytest.raises(ContractViolation):
        stream.emit("phase", phase="train", elapsedSeconds=1.0)


def test_non_finite_path_finds_nested_values() -> None:
    assert non_finite_path({"a": [1.0, {"b": math.inf}]}) == "/a/1/b"
    assert non_finite_path({"a": [1.0, 2]}) is None


def test_reader_gone_is_reported_once_without_raising() -> None:
    read, write = os.pipe()
    os.close(read)
    stream = EventStream(write, strict=True)
    gone = []
    stream.on_reader_gone = lambda: gone.append(True)
    stream.emit("phase", phase="decode", elapsedSeconds=0.0)
    stream.emit("phase", phase="train", elapsedSeconds=0.0)
    assert stream.reader_gone and gone == [True]
    os.close(write)


def test_junk_written_to_fd1_and_sys_stdout_never_reaches_the_stream() -> None:
    program = textwrap.dedent(
        """
        import os, sys
        from rovertrain.protocol.events import EventStream, claim_stdout
        stream = EventStream(claim_stdout(), strict=True)
        print("stray print")
        os.write(1, b"native library noise\\n")
        sys.stdout.write("more junk")
        stream.emit("phase", phase="decode", elapsedSeconds=0.0)
        print("junk between")
        stream.emit("error", code="internal", message="done")
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=60, check=True
    )
    events = parse_events(completed.stdout)
    assert [e["kind"] for e in events] == ["phase", "error"]
    assert b"stray print" in completed.stderr and b"native library noise" in completed.stderr


def test_mirror_gets_every_event(tmp_path) -> None:
    stream = EventStream(None, strict=True)
    stream.mirror_to(tmp_path / "jobs" / "events.ndjson")
    stream.emit("phase", phase="decode", elapsedSeconds=0.0)
    stream.emit("complete", trained=False, accepted=[], rejected={})
    stream.close()
    events = parse_events((tmp_path / "jobs" / "events.ndjson").read_text())
    assert [e["kind"] for e in events] == ["phase", "complete"]


def test_a_failing_listener_is_disabled_not_fatal(capsys) -> None:
    stream = EventStream(None, strict=True)
    seen = []

    def broken(event):
        raise ValueError("boom")

    stream.listeners.extend([broken, seen.append])
    stream.emit("phase", phase="decode", elapsedSeconds=0.0)
    stream.emit("phase", phase="train", elapsedSeconds=0.0)
    assert [e["phase"] for e in seen] == ["decode", "train"]
    assert stream.listeners == [seen.append]
    assert "disabled after an error: boom" in capsys.readouterr().err


def test_required_fields_are_the_schema_s_kind_for_kind() -> None:
    schema = json.loads((REPO / "schemas" / "events.schema.json").read_text())
    from_schema = {}
    for rule in schema["allOf"]:
        kind = rule["if"]["properties"]["kind"]["const"]
        definition = schema["$defs"][rule["then"]["$ref"].removeprefix("#/$defs/")]
        from_schema[kind] = tuple(definition.get("required", ()))
    assert set(schema["properties"]["kind"]["enum"]) == set(from_schema)
    assert from_schema == REQUIRED_FIELDS
    envelope = set(schema["required"])
    assert all(not envelope & set(fields) for fields in REQUIRED_FIELDS.values())
