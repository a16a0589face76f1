"""The fleet table's rows: what a session's files, the store and the jobs say."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from rovertrain.review.fleet import FileCache, Fleet, SessionFiles, session_row


def test_a_sessions_state_says_why_it_was_not_read() -> None:
    files = SessionFiles("rover-a", "2026-01-02T03:04:05Z", 10, 4, 0.0, 9000.0, None)
    row = session_row("s-1", files, None, {})
    assert row["state"] == "new" and row["seconds"] == 9.0 and row["policyShare"] == 0.4
    row = session_row("s-1", files, None, {"s-1": "no_windows: no usable window"})
    assert row["state"] == "skipped" and row["why"] == "no_windows: no usable window"
    broken = SessionFiles(None, None, None, None, None, None, "invalid_recording: bad json")
    row = session_row("s-1", broken, None, {})
    assert row["state"] == "skipped" and "bad json" in str(row["why"])


def test_the_cache_reads_a_file_again_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("a")
    cache: FileCache[str] = FileCache()
    calls: list[int] = []

    def read() -> str:
        calls.append(1)
        return path.read_text()

    assert cache.get("k", [path], read) == "a"
    assert cache.get("k", [path], read) == "a"
    assert len(calls) == 1
    path.write_text("bb")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert cache.get("k", [path], read) == "bb"
    assert len(calls) == 2


def test_a_broken_or_new_session_is_listed_with_why(synth_copy: Path) -> None:
    root = synth_copy
    sessions = sorted(p.name for p in (root / "recordings").iterdir())
    (root / "recordings" / sessions[0] / "session.json").write_text("{broken")
    copy = root / "recordings" / "copy-1"
    shutil.copytree(root / "recordings" / sessions[1], copy)
    meta = json.loads((copy / "session.json").read_text())
    meta["sessionId"] = "copy-1"
    (copy / "session.json").write_text(json.dumps(meta))
    rows = {row["id"]: row for row in Fleet(root).sessions()}
    assert rows[sessions[0]]["state"] == "skipped"
    assert "session.json" in str(rows[sessions[0]]["why"])
    assert rows["copy-1"]["state"] == "new" and rows["copy-1"]["commands"] > 0
    assert set(rows) == {*sessions, "copy-1"}
