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


def test_correction_windows_follow_each_take_over() -> None:
    """The 2 s after a person's command that follows a policy's are the correction."""
    import numpy as np

    from rovertrain.contracts.command_schema import HUMAN, POLICY
    from rovertrain.data.recording import Command
    from rovertrain.data.windows import correction_windows

    ticks = np.arange(0, 6000, 100)
    commands = [
        Command(0.0, "drive", {"speed": 0.5}, HUMAN),
        Command(500.0, "drive", {"speed": 0.5}, POLICY),
        Command(1050.0, "stop", {}, HUMAN),  # the take-over
        Command(1500.0, "drive", {"speed": 0.5}, HUMAN),  # the person drives on: no new one
    ]
    marked = correction_windows(ticks, commands)
    assert np.flatnonzero(marked).tolist() == list(range(10, 31))  # [1000, 3100) cover 1050-3050
    assert not correction_windows(ticks, commands[:1]).any()
    assert not correction_windows(ticks, [c for c in commands if c.by == HUMAN]).any()


def test_corrections_are_repeated_within_the_session_s_room() -> None:
    from rovertrain.data.sampling import with_corrections_repeated

    corrections = [False, True, False, True, False]
    assert with_corrections_repeated([0, 1, 3, 4], corrections, 3, 10) == [0, 1, 1, 1, 3, 3, 3, 4]
    assert with_corrections_repeated([0, 1, 3, 4], corrections, 3, 1) == [0, 1, 1, 3, 4]
    assert with_corrections_repeated([0, 1, 3, 4], corrections, 1, 10) == [0, 1, 3, 4]
    assert with_corrections_repeated([0, 2, 4], corrections, 5, 10) == [0, 2, 4]
