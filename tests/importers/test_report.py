"""The progress line and the events of one import."""

from __future__ import annotations

import io
import os

from conftest import parse_events
from rovertrain.importers.report import Imported, ImportRun, Progress, Rejected
from rovertrain.protocol.events import EventStream


def test_progress_rewrites_one_line_and_clears_it() -> None:
    out = io.StringIO()
    progress = Progress(True, out, every_seconds=0)
    progress.show("donkey-x", 5, 10)
    progress.show("donkey-x", 10, 10)
    progress.done()
    text = out.getvalue()
    assert "\rimporting donkey-x: 5/10 frames" in text and "10/10" in text
    assert text.endswith("\r") and "\n" not in text


def test_no_progress_off_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress(False, out, every_seconds=0)
    progress.show("donkey-x", 5, 10)
    progress.done()
    assert out.getvalue() == ""


def imported(
    session_id: str,
    *,
    frames: int,
    commands: int,
    dropped: dict[str, int] | None = None,
    existing: bool = False,
) -> Imported:
    return Imported(
        source="tub",
        session_id=session_id,
        frames=frames,
        commands=commands,
        dropped=dropped or {},
        path=f"/r/recordings/{session_id}",
        dry_run=False,
        existing=existing,
    )


def test_events_of_an_import_follow_the_schema() -> None:
    read, write = os.pipe()
    stream = EventStream(write, strict=True)
    run = ImportRun(stream, Progress(False), dry_run=False)
    written = imported("donkey-a-1", frames=10, commands=3, dropped={"pilot": 2})
    run.imported(written)
    run.imported(imported("donkey-b-2", frames=4, commands=1, existing=True))
    run.skipped(Rejected("bad", "donkey-bad", "invalid_recording", "manifest.json: nope"))
    run.finish("donkey")
    os.close(write)
    with os.fdopen(read) as pipe:
        events = parse_events(pipe.read())
    assert [e["kind"] for e in events] == ["imported", "imported", "skipped", "complete"]
    complete = events[-1]
    assert complete["accepted"] == ["donkey-a-1", "donkey-b-2"]
    assert complete["rejected"] == {"donkey-bad": "invalid_recording: manifest.json: nope"}
    assert complete["imports"] == {
        "source": "donkey",
        "sessions": 2,
        "written": 1,
        "existing": 1,
        "skipped": 1,
        "frames": 14,
        "dryRun": False,
    }
    assert events[2]["source"] == "bad"
