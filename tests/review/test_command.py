"""`rovertrain review ROOT`: one `review` event with the address, serves until interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from conftest import REPO, cli_env, parse_events


def test_the_command_serves_the_root_and_stops_on_ctrl_c(synth_copy: Path) -> None:
    root = synth_copy
    process = subprocess.Popen(
        [sys.executable, "-m", "rovertrain", "review", str(root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=REPO,
    )
    assert process.stdout is not None
    first = json.loads(process.stdout.readline())
    assert first["kind"] == "review" and first["root"] == str(root)
    url = first["url"]
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url + "api/fleet") as response:
        fleet = json.loads(response.read())
    assert len(fleet["sessions"]) == len(list((root / "recordings").iterdir()))
    process.send_signal(signal.SIGINT)
    rest, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert parse_events(rest) == []
    assert url in stderr.decode()


def test_a_root_without_recordings_is_an_error(tmp_path: Path) -> None:
    from conftest import run_cli

    result = run_cli("review", str(tmp_path), "--port", "0")
    assert result.code != 0
    assert result.last()["kind"] == "error" and result.last()["code"] == "root_unavailable"
