"""`rovertrain import lerobot` end to end on LeRobot v3 data sets written in code."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
import pytest

from conftest import Result, cli_env, parse_events
from importers.lerobot_data import write_dataset
from importers.schemas import check_recording

Cli = Callable[..., Result]
FPS = 10
LENGTHS = [23, 31, 17]


def shown_index(image: np.ndarray) -> int:
    """The fixture paints (index * 3) % width columns: read that count back."""
    return int((image[:, :, 2].mean(axis=0) > 110).sum())


def test_each_episode_becomes_a_recording_cut_without_re_encoding(cli: Cli, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "lekiwi_drive", LENGTHS, fps=FPS, gop=5)
    root = tmp_path / "root"
    result = cli("import", "lerobot", str(dataset), "--out", str(root))
    assert result.code == 0, result.stderr
    imported = result.of("imported")
    assert [event["frames"] for event in imported] == LENGTHS
    assert all(event["video"]["remuxed"] for event in imported)
    assert [event["video"]["leadingFrames"] for event in imported] == [0, 23 % 5, 54 % 5]

    starts = [0, 23, 54]
    for event, start, length in zip(imported, starts, LENGTHS, strict=True):
        folder = root / "recordings" / event["sessionId"]
        check_recording(folder)
        meta = json.loads((folder / "session.json").read_text())
        assert meta["roverId"] == "lekiwi"
        assert meta["commandRoles"] == {"stop": "stop", "drive": "movement"}
        commands = [
            json.loads(line) for line in (folder / "commands.ndjson").read_text().splitlines()
        ]
        assert commands[0] == {
            "t": 0.0,
            "type": "drive",
            "values": {"speed": 0.5, "turn": commands[0]["values"]["turn"]},
        }
        # stopped for the last quarter: the stop, then held (re-sent at the keepalive)
        stops = [c["t"] for c in commands if c["type"] == "stop"]
        assert stops[0] == pytest.approx(length * 3 // 4 * 1000 / FPS, abs=1)
        assert all(later - earlier >= 450 for earlier, later in itertools.pairwise(stops))
        assert commands[commands.index({"t": stops[0], "type": "stop"}) :] == [
            {"t": t, "type": "stop"} for t in stops
        ]
        # Every frame, at its time on the command clock, is the episode's frame of that time.
        offset = meta["video"]["offsetMs"]
        with av.open(str(folder / meta["video"]["file"])) as container:
            assert container.streams.video[0].codec_context.name == "h264"
            seen = []
            for frame in container.decode(video=0):
                t = frame.time * 1000 + offset
                index = start + round(t * FPS / 1000)
                assert abs(shown_index(frame.to_ndarray(format="rgb24")) - (index * 3) % 64) <= 1
                if t >= -1:
                    seen.append(round(t * FPS / 1000))
        trailing = event["video"]["trailingFrames"]
        assert seen == list(range(length + trailing))
        assert trailing <= 2  # B-frames: at most the reference frames shown after the end

    inspected = cli("inspect", str(root))
    assert inspected.code == 0, inspected.stderr
    assert not inspected.of("skipped") and len(inspected.of("dataset")) == 3


def test_episodes_action_map_dry_run_and_idempotence(cli: Cli, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", LENGTHS, fps=FPS)
    root = tmp_path / "root"
    action_map = tmp_path / "map.json"
    action_map.write_text(
        json.dumps({"command": "move", "values": {"v": "x.vel", "w": {"index": 1, "scale": 2}}})
    )
    args = ["import", "lerobot", str(dataset), "--out", str(root), "--episodes", "0,2,7",
            "--action-map", str(action_map)]  # fmt: skip
    dry = cli(*args, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert [e["frames"] for e in dry.of("imported")] == [23, 17]
    assert all(e["dryRun"] for e in dry.of("imported"))
    assert [e["code"] for e in dry.of("skipped")] == ["missing_recording"]
    assert not (root / "recordings").exists()

    first = cli(*args)
    assert first.code == 0, first.stderr
    ids = [e["sessionId"] for e in first.of("imported")]
    assert ids == [e["sessionId"] for e in dry.of("imported")]
    meta = json.loads((root / "recordings" / ids[0] / "session.json").read_text())
    assert meta["commandRoles"] == {"stop": "stop", "move": "movement"}
    line = json.loads(
        (root / "recordings" / ids[0] / "commands.ndjson").read_text().splitlines()[0]
    )
    assert line["type"] == "move" and set(line["values"]) == {"v", "w"}

    second = cli(*args)
    assert [e["existing"] for e in second.of("imported")] == [True, True]
    assert second.last()["imports"]["written"] == 0


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda d: (d / "meta" / "info.json").write_text("{"), "invalid_recording"),
        (
            lambda d: (d / "meta" / "info.json").write_text('{"codebase_version": "v2.1"}'),
            "invalid_recording",
        ),
        (lambda d: (d / "videos").rename(d / "gone"), "invalid_recording"),
        (
            lambda d: next(d.glob("videos/*/*/*.mp4")).write_bytes(
                b"#EXTM3U\nfile:///etc/passwd\n"
            ),
            "invalid_recording",
        ),
    ],
)
def test_a_damaged_data_set_is_skipped_not_a_traceback(
    cli: Cli, tmp_path: Path, damage: Callable[[Path], object], code: str
) -> None:
    dataset = write_dataset(tmp_path / "ds", [12, 9], fps=FPS)
    damage(dataset)
    result = cli("import", "lerobot", str(dataset), "--out", str(tmp_path / "root"))
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.of("skipped") and {e["code"] for e in result.of("skipped")} == {code}
    assert result.last()["kind"] == "complete"


def test_a_bad_action_map_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", [12], fps=FPS)
    bad = tmp_path / "map.json"
    bad.write_text(json.dumps({"values": {"speed": 5}}))
    result = cli(
        "import", "lerobot", str(dataset), "--out", str(tmp_path / "r"), "--action-map", str(bad)
    )
    assert result.code == 2
    assert result.last()["code"] == "usage" and "/values/speed" in result.last()["message"]


def test_a_camera_the_data_set_lacks_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", [12], fps=FPS)
    result = cli("import", "lerobot", str(dataset), "--out", str(tmp_path / "r"), "--camera", "x")
    assert result.code == 2
    assert result.last()["code"] == "usage" and "--camera" in result.last()["message"]


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", [12], fps=FPS)
    program = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyarrow':\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from rovertrain.cli import main\n"
        f"sys.argv = ['rovertrain', 'import', 'lerobot', {str(dataset)!r}, '--out', "
        f"{str(tmp_path / 'r')!r}]\n"
        "main()\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=120, env=cli_env()
    )
    events = parse_events(completed.stdout)
    assert completed.returncode == 1
    assert events[-1]["code"] == "missing_dependency"
    assert "rovertrain[import]" in events[-1]["message"]
