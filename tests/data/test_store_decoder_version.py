"""A window store written by an older decoder is decoded again, never mixed in: decoder
version 2 skipped the loop filter, so its tick frames are not the pictures a rover's camera
gives (docs/recording-format.md); a root it filled must train on version 3's frames."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import REPO, Result, cli_env, parse_events, run_cli
from rovertrain.contracts.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH
from rovertrain.data.recording import load_recording
from rovertrain.data.window_store import entries as store_entries
from rovertrain.data.window_store.manifest import read_manifest
from rovertrain.video.decode import decode_to_file
from rovertrain.video.decode_protocol import DecodeLimits

LIMITS = DecodeLimits(max_bytes=1 << 32, max_pixels=1 << 26, max_seconds=7200, threads=1)


def inspect_with_decoder(root: Path, version: int) -> Result:
    """`rovertrain inspect ROOT` as a release whose decoder version was `version` ran it."""
    code = (
        "import runpy, sys\n"
        "import rovertrain.data.window_store.entries as entries\n"
        f"entries.DECODER_VERSION = {version}\n"
        "sys.argv[0] = 'rovertrain'\n"
        "runpy.run_module('rovertrain', run_name='__main__')\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, "inspect", str(root)],
        capture_output=True, timeout=300, env=cli_env(), cwd=REPO,
    )  # fmt: skip
    return Result(completed.returncode, parse_events(completed.stdout), completed.stderr.decode())


def decoded(result: Result) -> dict[str, bool]:
    """Per session of an `inspect`: True when its frames were decoded (not read from the store)."""
    return {e["sessionId"]: not e["diagnostics"]["cached"] for e in result.of("dataset")}


def fresh_frames(root: Path, session_id: str, scratch: Path) -> np.ndarray:
    recording = load_recording(root, session_id)
    sink = scratch / f"{session_id}.frames"
    with open(sink, "wb") as stream:
        decode_to_file(recording.video_path, recording.video_offset_ms, LIMITS, stream)
    return np.fromfile(sink, dtype=np.uint8).reshape(-1, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)


def test_a_store_of_the_decoder_that_skipped_the_loop_filter_is_decoded_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    made = run_cli("synth", "--out", str(root), "--sessions", "2", "--minutes", "0.05",
                   "--seed", "9")  # fmt: skip
    assert made.code == 0, made.stderr
    old = inspect_with_decoder(root, 2)
    assert old.code == 0, old.stderr
    sessions = sorted(decoded(old))
    assert len(sessions) == 2 and all(decoded(old).values())
    old_rows = read_manifest(root).rows
    # Mark what the old decoder stored, so that a frame of it read back would show.
    for row in old_rows.values():
        frames = store_entries.store_dir(root) / f"{row.entry}.frames"
        frames.write_bytes(bytes(frames.stat().st_size))

    new = run_cli("inspect", str(root))
    assert new.code == 0, new.stderr
    assert decoded(new) == dict.fromkeys(sessions, True)
    rows = read_manifest(root).rows
    for session_id in sessions:
        entry = store_entries.entry_for(root, load_recording(root, session_id))
        assert rows[session_id].entry == entry.name != old_rows[session_id].entry
        stored = store_entries.load(entry)
        assert stored is not None and stored.frames.any()
        np.testing.assert_array_equal(stored.frames, fresh_frames(root, session_id, tmp_path))

    again = run_cli("inspect", str(root))
    assert decoded(again) == dict.fromkeys(sessions, False)  # decoded once, then stored
