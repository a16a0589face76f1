"""curation.json: the parser's rules, the locked atomic writers, the windows a stretch holds."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode, exit_code_for_error
from rovertrain.data.curation import (
    CURATION_FORMAT,
    MAX_CURATION_BYTES,
    Curation,
    LeftOut,
    add_left_out,
    covering_entry,
    left_out_mask,
    parse_curation,
    read_curation,
    remove_left_out,
)
from rovertrain.store.layout import Layout

SESSION = "2026-11-02T10-15-00-rover-ash"
ENTRY = {
    "id": "lo-3f2a9c1b",
    "sessionId": SESSION,
    "startMs": 12000,
    "endMs": 18500,
    "reason": "hit the wall",
    "at": "2026-12-06T10:00:00Z",
}


def document(*entries: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"format": CURATION_FORMAT, "leftOut": list(entries), **top}).encode()


def invalid(data: bytes) -> str:
    with pytest.raises(RovertrainError) as caught:
        parse_curation(data)
    assert caught.value.code == ErrorCode.INVALID_CURATION
    return caught.value.message


# -- the parser ------------------------------------------------------------------------------


def test_a_valid_file_parses_and_ignores_unknown_keys() -> None:
    extra = {**ENTRY, "id": "b", "startMs": 0.5, "endMs": 100.25, "note": "later field"}
    curation = parse_curation(document(ENTRY, extra, comment="forward compatible"))
    first, second = curation.entries
    assert first == LeftOut("lo-3f2a9c1b", SESSION, 12000.0, 18500.0, "hit the wall", ENTRY["at"])
    assert (second.start_ms, second.end_ms) == (0.5, 100.25)
    assert curation.for_session(SESSION) == (first, second)
    assert curation.for_session("other") == ()
    assert first.to_json() == ENTRY  # whole milliseconds are written back as integers


def test_keys_this_version_does_not_know_survive_a_write(tmp_path: Path) -> None:
    hand = {**ENTRY, "note": "the pad's battery died", "by": {"script": "tidy.py"}}
    Layout(tmp_path).curation.write_bytes(document(hand, owner="fleet-ops", version=2))
    added = add_left_out(tmp_path, SESSION, 0, 500, "idle")
    written = json.loads(Layout(tmp_path).curation.read_bytes())
    assert written["owner"] == "fleet-ops" and written["version"] == 2
    assert written["format"] == CURATION_FORMAT
    assert written["leftOut"][0] == hand
    assert remove_left_out(tmp_path, added.id)
    written = json.loads(Layout(tmp_path).curation.read_bytes())
    assert written["leftOut"] == [hand] and written["owner"] == "fleet-ops"


def test_a_reason_that_utf8_cannot_hold_is_refused_and_nothing_written(tmp_path: Path) -> None:
    with pytest.raises(RovertrainError) as caught:
        add_left_out(tmp_path, SESSION, 0, 500, "bad \ud800 text")
    assert caught.value.code == ErrorCode.INVALID_CURATION and "surrogate" in caught.value.message
    assert not Layout(tmp_path).curation.exists()


def test_an_empty_list_and_a_byte_order_mark_are_fine() -> None:
    assert parse_curation(b"\xef\xbb\xbf" + document()) == Curation()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("id", "", "leftOut[1].id: must be a string of 1 to 64"),
        ("id", "x" * 65, "leftOut[1].id: must be a string of 1 to 64"),
        ("id", "has space", "leftOut[1].id: 'has space' has characters"),
        ("id", 7, "leftOut[1].id: must be a string"),
        ("sessionId", "../etc", "leftOut[1].sessionId: '../etc' is not a session id"),
        ("sessionId", "-starts-with-a-dash", "leftOut[1].sessionId"),
        ("sessionId", None, "leftOut[1].sessionId"),
        ("startMs", "12000", "leftOut[1].startMs: must be a number"),
        ("startMs", True, "leftOut[1].startMs: must be a number"),
        ("startMs", 2**53, "leftOut[1].startMs: must be a number within"),
        ("endMs", -(2**53), "leftOut[1].endMs: must be a number within"),
        ("endMs", 12000, "leftOut[1].endMs: must be greater than startMs (12000)"),
        ("endMs", 11999.5, "leftOut[1].endMs: must be greater than startMs"),
        ("reason", "", "leftOut[1].reason: must be a string of 1 to 500"),
        ("reason", "r" * 501, "leftOut[1].reason: must be a string of 1 to 500"),
        ("reason", ["a"], "leftOut[1].reason"),
        ("at", "yesterday", "leftOut[1].at: 'yesterday' is not an ISO 8601 UTC time"),
        ("at", "2026-12-06T10:00:00", "leftOut[1].at"),  # no zone: not known to be UTC
        ("at", "2026-12-06T10:00:00+01:00", "leftOut[1].at"),
        ("at", "2026-12-06", "leftOut[1].at"),
        ("at", 1765015200, "leftOut[1].at"),
    ],
)
def test_every_field_s_rule_names_the_entry_and_field(field: str, value: Any, says: str) -> None:
    bad = {**ENTRY, "id": "second", field: value}
    assert says in invalid(document(ENTRY, bad))


@pytest.mark.parametrize("field", ["id", "sessionId", "startMs", "endMs", "reason", "at"])
def test_a_missing_field_is_named(field: str) -> None:
    bad = {key: value for key, value in ENTRY.items() if key != field}
    assert f"leftOut[0].{field}: missing" in invalid(document(bad))


def test_accepted_times() -> None:
    for at in ("2026-12-06T10:00:00Z", "2026-12-06T10:00:00.250Z", "2026-12-06T10:00:00+00:00"):
        assert parse_curation(document({**ENTRY, "at": at})).entries[0].at == at
    edge = {**ENTRY, "startMs": -(2**53 - 1), "endMs": 2**53 - 1}
    assert parse_curation(document(edge)).entries[0].end_ms == 2**53 - 1


def test_duplicate_ids_are_refused() -> None:
    message = invalid(document(ENTRY, {**ENTRY, "startMs": 0, "endMs": 5}))
    assert "leftOut[1].id: 'lo-3f2a9c1b' is also leftOut[0]'s" in message


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"format": "rovertrain-curation/2", "leftOut": []}', "format: must be"),
        (b'{"leftOut": []}', "format: must be"),
        (b'{"format": "rovertrain-curation/1"}', "leftOut: must be a list"),
        (b'{"format": "rovertrain-curation/1", "leftOut": {}}', "leftOut: must be a list"),
        (b'{"format": "rovertrain-curation/1", "leftOut": [3]}', "leftOut[0]: must be an object"),
        (b"[]", "must be a JSON object"),
        (b"", "not valid JSON"),
        (b'{"format": "rovertrain-curation/1", "leftOut": []', "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_the_document_s_shape(data: bytes, says: str) -> None:
    assert says in invalid(data)


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "rovertrain-curation/1", "leftOut": [], "leftOut": []}',  # duplicate key
        '{"format": "rovertrain-curation/1", "leftOut": [{"startMs": NaN}]}',
        '{"format": "rovertrain-curation/1", "leftOut": [{"startMs": 1e400}]}',
        '{"format": "rovertrain-curation/1", "leftOut": []} trailing',
        '{"format": "rovertrain-curation/1", "leftOut": ' + "[" * 40 + "]" * 40 + "}",
    ],
)
def test_strict_json(text: str) -> None:
    assert "not valid JSON" in invalid(text.encode())


def test_too_many_entries() -> None:
    entries = [{**ENTRY, "id": f"e{n}"} for n in range(100_001)]
    assert "more than 100000 entries" in invalid(document(*entries))


def test_parse_refuses_bytes_over_the_limit() -> None:
    assert "larger than 16 MiB" in invalid(b" " * (MAX_CURATION_BYTES + 1))


left_out_entries = st.builds(
    LeftOut,
    id=st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True),
    session_id=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", fullmatch=True),
    start_ms=st.floats(-1e12, 1e12, allow_nan=False),
    end_ms=st.just(0.0),
    reason=st.text(min_size=1, max_size=500),
    at=st.datetimes(timezones=st.just(UTC)).map(lambda moment: moment.isoformat()),
).map(lambda e: LeftOut(e.id, e.session_id, e.start_ms, e.start_ms + 1.5, e.reason, e.at))


@given(st.lists(left_out_entries, max_size=8, unique_by=lambda entry: entry.id))
@settings(max_examples=150, deadline=None)
def test_to_json_parses_back_to_the_same_curation(entries: list[LeftOut]) -> None:
    curation = Curation(tuple(entries))
    text = json.dumps(curation.to_json(), ensure_ascii=False).encode()
    assert parse_curation(text) == curation


# -- reading the file ------------------------------------------------------------------------


def test_no_file_is_an_empty_curation(tmp_path: Path) -> None:
    assert read_curation(tmp_path) == Curation()
    assert read_curation(tmp_path / "no-such-root") == Curation()


def test_the_file_is_read(tmp_path: Path) -> None:
    Layout(tmp_path).curation.write_bytes(document(ENTRY))
    assert read_curation(tmp_path).entries[0].id == ENTRY["id"]


def test_a_file_over_16_mib_is_refused_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Layout(tmp_path).curation
    with open(path, "wb") as stream:
        stream.truncate(MAX_CURATION_BYTES + 1)  # sparse: nothing written
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(RovertrainError, match="larger than 16 MiB") as caught:
        read_curation(tmp_path)
    assert caught.value.code == ErrorCode.INVALID_CURATION and not reads


def test_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_bytes(document(ENTRY))
    Layout(tmp_path).curation.symlink_to(real)
    with pytest.raises(RovertrainError, match="symbolic link"):
        read_curation(tmp_path)


def test_a_folder_and_a_fifo_are_refused(tmp_path: Path) -> None:
    path = Layout(tmp_path).curation
    path.mkdir()
    with pytest.raises(RovertrainError, match="not a regular file"):
        read_curation(tmp_path)
    path.rmdir()
    os.mkfifo(path)  # opened without blocking: no writer needed
    with pytest.raises(RovertrainError, match="not a regular file"):
        read_curation(tmp_path)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    short = Path(f"/tmp/cur-{os.getpid()}")  # a socket path is limited to 108 bytes
    short.mkdir(exist_ok=True)
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(Layout(short).curation))
            with pytest.raises(RovertrainError) as caught:
                read_curation(short)
            assert caught.value.code == ErrorCode.INVALID_CURATION
    finally:
        Layout(short).curation.unlink(missing_ok=True)
        short.rmdir()


def test_an_invalid_curation_exits_like_an_invalid_job_file() -> None:
    assert exit_code_for_error("invalid_curation") == exit_code_for_error("invalid_job")
    assert exit_code_for_error("invalid_curation") == ExitCode.USAGE


# -- writing ---------------------------------------------------------------------------------


def test_add_then_remove(tmp_path: Path) -> None:
    now = datetime(2026, 12, 6, 10, 0, 0, tzinfo=UTC)
    entry = add_left_out(tmp_path, SESSION, 12000, 18500.5, "hit the wall", now=now)
    assert entry.id.startswith("lo-") and len(entry.id) == 11
    assert (entry.start_ms, entry.end_ms, entry.at) == (12000.0, 18500.5, "2026-12-06T10:00:00Z")
    other = add_left_out(tmp_path, "s2", 0, 100, "blurred")
    assert read_curation(tmp_path).entries == (entry, other)
    written = json.loads(Layout(tmp_path).curation.read_text())
    assert written["format"] == CURATION_FORMAT
    assert written["leftOut"][0] == {**ENTRY, "id": entry.id, "endMs": 18500.5}
    assert remove_left_out(tmp_path, entry.id) is True
    assert read_curation(tmp_path).entries == (other,)
    assert remove_left_out(tmp_path, entry.id) is False  # already removed
    assert remove_left_out(tmp_path, other.id) is True
    assert read_curation(tmp_path) == Curation()
    assert Layout(tmp_path).curation_lock.exists()  # never deleted
    (tmp_path / "fresh").mkdir()
    assert remove_left_out(tmp_path / "fresh", "lo-00000000") is False  # no file: nothing
    assert not Layout(tmp_path / "fresh").curation.exists()


@pytest.mark.parametrize(
    ("session_id", "start", "end", "reason", "says"),
    [
        ("../x", 0, 10, "r", "sessionId"),
        (SESSION, 10, 10, "r", "endMs: must be greater than startMs"),
        (SESSION, float("nan"), 10, "r", "startMs"),
        (SESSION, 0, float("inf"), "r", "endMs"),
        (SESSION, 0, 10, "", "reason"),
        (SESSION, 0, 10, "r" * 501, "reason"),
    ],
)
def test_add_refuses_bad_input_and_leaves_the_file(
    tmp_path: Path, session_id: str, start: float, end: float, reason: str, says: str
) -> None:
    first = add_left_out(tmp_path, SESSION, 0, 10, "kept")
    before = Layout(tmp_path).curation.read_bytes()
    with pytest.raises(RovertrainError, match=says) as caught:
        add_left_out(tmp_path, session_id, start, end, reason)
    assert caught.value.code == ErrorCode.INVALID_CURATION
    assert Layout(tmp_path).curation.read_bytes() == before
    assert read_curation(tmp_path).entries == (first,)


@pytest.mark.parametrize(
    "content",
    [b'{"format": "rovertrain-curation/1", "leftOut": [', b"", document(ENTRY, ENTRY)],
)
def test_add_and_remove_never_overwrite_an_invalid_file(tmp_path: Path, content: bytes) -> None:
    path = Layout(tmp_path).curation
    path.write_bytes(content)
    for write in (
        lambda: add_left_out(tmp_path, SESSION, 0, 10, "r"),
        lambda: remove_left_out(tmp_path, ENTRY["id"]),
    ):
        with pytest.raises(RovertrainError) as caught:
            write()
        assert caught.value.code == ErrorCode.INVALID_CURATION
        assert path.read_bytes() == content


def test_add_refuses_to_replace_a_link(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_bytes(document())
    Layout(tmp_path).curation.symlink_to(real)
    with pytest.raises(RovertrainError, match="symbolic link"):
        add_left_out(tmp_path, SESSION, 0, 10, "r")
    assert Layout(tmp_path).curation.is_symlink() and real.read_bytes() == document()


def _add_many(root: str, writer: int, count: int) -> None:
    for number in range(count):
        add_left_out(Path(root), f"s{writer}", number, number + 1, f"writer {writer}")


def test_two_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")  # no fork of the test process's threads
    workers = [context.Process(target=_add_many, args=(str(tmp_path), n, 50)) for n in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    entries = read_curation(tmp_path).entries
    assert len(entries) == 100 and len({entry.id for entry in entries}) == 100
    for writer in range(2):
        mine = [entry.start_ms for entry in entries if entry.session_id == f"s{writer}"]
        assert mine == [float(n) for n in range(50)]  # each writer's entries, in its order


def test_threads_adding_and_removing_at_once_lose_nothing(tmp_path: Path) -> None:
    doomed = [add_left_out(tmp_path, "gone", n, n + 1, "undo me") for n in range(20)]
    errors: list[BaseException] = []

    def run(target: Any) -> None:
        try:
            target()
        except BaseException as error:  # the assertion below reports it
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(lambda n=n: _add_many(str(tmp_path), n, 25),))
        for n in range(2)
    ]
    threads.append(
        threading.Thread(
            target=run, args=(lambda: [remove_left_out(tmp_path, e.id) for e in doomed],)
        )
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    curation = read_curation(tmp_path)
    assert len(curation.entries) == 50 and not curation.for_session("gone")


def test_a_reader_never_sees_half_a_file(tmp_path: Path) -> None:
    done = threading.Event()
    seen: list[int] = []

    def read_all_the_time() -> None:
        while not done.is_set():
            seen.append(len(read_curation(tmp_path).entries))  # raises on half a file

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        _add_many(str(tmp_path), 0, 40)
    finally:
        done.set()
        reader.join(timeout=60)
    assert seen == sorted(seen) and len(read_curation(tmp_path).entries) == 40


# -- the windows a stretch holds -------------------------------------------------------------


def stretch(start: float, end: float, session_id: str = SESSION, reason: str = "r") -> LeftOut:
    return LeftOut(f"e{start}-{end}", session_id, start, end, reason, ENTRY["at"])


def test_the_bounds_are_inclusive() -> None:
    ticks = np.arange(0, 1000, 100, dtype=np.int64)
    mask = left_out_mask(ticks, [stretch(200, 400)])
    assert ticks[mask].tolist() == [200, 300, 400]
    assert ticks[left_out_mask(ticks, [stretch(201, 399)])].tolist() == [300]
    assert not left_out_mask(ticks, [stretch(901, 950)]).any()
    assert not left_out_mask(ticks, []).any()


def test_several_stretches_and_other_sessions() -> None:
    ticks = np.arange(-500, 1000, 100, dtype=np.int64)
    curation = Curation(
        (
            stretch(-450, -250),
            stretch(0, 100, session_id="another-session"),
            stretch(500, 700),
            stretch(650, 800),
        )
    )
    mask = left_out_mask(ticks, curation.for_session(SESSION))
    assert ticks[mask].tolist() == [-400, -300, 500, 600, 700, 800]


def test_a_window_in_two_stretches_belongs_to_the_first() -> None:
    ticks = np.arange(0, 1000, 100, dtype=np.int64)
    covering = covering_entry(ticks, [stretch(300, 600), stretch(100, 400)])
    assert covering.tolist() == [-1, 1, 1, 0, 0, 0, 0, -1, -1, -1]
