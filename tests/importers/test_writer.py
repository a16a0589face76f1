"""Writing a recording whole or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rovertrain.data.recording import Command, load_recording
from rovertrain.importers.writer import WEBM_FILE, SessionMeta, Staging, recording_exists

META = SessionMeta("donkey-a-1", "rover", "donkeycar", 1_764_500_000_000.0, WEBM_FILE, 0.0)


def test_a_failed_write_leaves_nothing_and_a_commit_moves_the_folder(tmp_path: Path) -> None:
    try:
        with Staging(tmp_path, "donkey-a-1") as staging:
            (staging.path / WEBM_FILE).write_bytes(b"partial")
            raise RuntimeError("killed")
    except RuntimeError:
        pass
    assert not recording_exists(tmp_path, "donkey-a-1")
    assert os.listdir(tmp_path / "recordings") == []
    with Staging(tmp_path, "donkey-a-1") as staging:
        (staging.path / WEBM_FILE).write_bytes(b"video")
        assert staging.commit(META, [Command(0.0, "stop")])
    recording = load_recording(tmp_path, "donkey-a-1")
    assert recording.command_roles == {"stop": "stop", "drive": "movement"}
    assert os.listdir(tmp_path / "recordings") == ["donkey-a-1"]
    # A second writer of the same id never replaces the first.
    with Staging(tmp_path, "donkey-a-1") as staging:
        (staging.path / WEBM_FILE).write_bytes(b"other")
        assert staging.commit(META, []) is False
    assert (tmp_path / "recordings" / "donkey-a-1" / WEBM_FILE).read_bytes() == b"video"
    assert os.listdir(tmp_path / "recordings") == ["donkey-a-1"]


def test_leftovers_of_killed_imports_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    recordings = tmp_path / "recordings"
    (recordings / f".donkey-a-1.{dead}.importing").mkdir(parents=True)
    (recordings / f".donkey-a-1.{os.getppid()}.importing").mkdir()
    with Staging(tmp_path, "donkey-a-1"):
        pass
    assert sorted(os.listdir(recordings)) == [f".donkey-a-1.{os.getppid()}.importing"]
