"""Recordings that say who sent each command (`by`): what `inspect` (the job's data set) keeps
of a session a policy drove part of, and of one it drove all of."""

from __future__ import annotations

import json
from pathlib import Path


def mark_policy(commands: Path, keep: range) -> int:
    """Marks every command outside `keep` (ms) as the policy's; returns how many."""
    lines = [json.loads(line) for line in commands.read_text().splitlines() if line.strip()]
    marked = 0
    for line in lines:
        if not keep.start <= line["t"] < keep.stop:
            line["by"] = "policy"
            marked += 1
    commands.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return marked


def test_inspect_leaves_out_the_windows_a_policy_drove(cli, synth_copy: Path) -> None:
    session = sorted(path.name for path in (synth_copy / "recordings").iterdir())[0]
    before = cli("inspect", str(synth_copy), session)
    assert before.code == 0, before.stderr
    plain = before.of("dataset")[0]["diagnostics"]
    assert "autonomousWindows" not in plain
    # The person drives the first 8 s, the policy the rest (every 100 ms window after it).
    assert mark_policy(synth_copy / "recordings" / session / "commands.ndjson", range(0, 8000)) > 0
    after = cli("inspect", str(synth_copy), session)
    assert after.code == 0, after.stderr
    marked = after.of("dataset")[0]["diagnostics"]
    assert marked["autonomousWindows"] > 100 and marked["takeOvers"] == 0
    assert marked["usableWindows"] == plain["usableWindows"] - marked["autonomousWindows"]
    assert marked["commands"] == plain["commands"]  # still read: they are the state


def test_a_session_a_policy_drove_throughout_is_skipped(cli, synth_copy: Path) -> None:
    session = sorted(path.name for path in (synth_copy / "recordings").iterdir())[1]
    mark_policy(synth_copy / "recordings" / session / "commands.ndjson", range(0, 0))
    result = cli("inspect", str(synth_copy), session)
    skipped = result.of("skipped")
    assert skipped and skipped[0]["code"] == "no_windows", result.stderr
    assert "a policy drove every window" in skipped[0]["reason"]
