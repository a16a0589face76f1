from __future__ import annotations

import os
from pathlib import Path

from rovertrain.protocol.eventlog import EventLogReader, read_events, replay
from rovertrain.store.layout import Layout

LINES = [b'{"kind":"phase","seq":0}', b'{"kind":"complete","seq":1}']


def test_read_events_skips_blank_lines_and_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    path.write_bytes(LINES[0] + b"\n\n" + LINES[1] + b"\n" + b'{"kind":"err')
    assert [e["seq"] for e in read_events(path)] == [0, 1]
    path.write_bytes(b"")
    assert list(read_events(path)) == []


def test_the_reader_picks_up_a_line_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    with open(path, "wb", buffering=0) as writer, open(path, "rb") as stream:
        reader = EventLogReader(stream)
        assert reader.read() == [] and not reader.fill()
        writer.write(LINES[0][:10])
        assert reader.read() == []
        writer.write(LINES[0][10:] + b"\n" + LINES[1][:5])
        ((raw, event),) = reader.read()
        assert raw == LINES[0] and event == {"kind": "phase", "seq": 0}
        writer.write(LINES[1][5:] + b"\n")
        assert [raw for raw, _ in reader.read()] == [LINES[1]]


def test_replay_copies_complete_lines_unchanged(tmp_path: Path) -> None:
    job = Layout(tmp_path).job("j")
    job.path.mkdir(parents=True)
    job.events.write_bytes(LINES[0] + b"\n" + LINES[1] + b"\n")
    read, write = os.pipe()
    try:
        assert replay(str(job.path), follow=False, raw=True, fd=write) == 0
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as stream:
        assert stream.read() == LINES[0] + b"\n" + LINES[1] + b"\n"
