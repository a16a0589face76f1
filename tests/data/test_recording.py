from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rovertrain.contracts.errors import SkipSession
from rovertrain.data.recording import load_recording, parse_command_log


def make_session(root: Path, session_id: str = "s1", **meta) -> Path:
    directory = root / "recordings" / session_id
    directory.mkdir(parents=True)
    (directory / "camera.webm").write_bytes(b"\x1a\x45\xdf\xa3")
    (directory / "commands.ndjson").write_text('{"t": 1, "type": "stop"}\n')
    document = {
        "format": "rovertrain-recording/1", "sessionId": session_id, "roverId": "r",
        "controlProfile": None, "video": {"file": "camera.webm", "offsetMs": 80},
        "commands": {"file": "commands.ndjson"}, **meta,
    }  # fmt: skip
    (directory / "session.json").write_text(json.dumps(document))
    return directory


def test_a_valid_session_loads(tmp_path: Path) -> None:
    make_session(tmp_path)
    recording = load_recording(tmp_path, "s1")
    assert recording.video_offset_ms == 80 and recording.rover_id == "r"


@pytest.mark.parametrize(
    ("meta", "code"),
    [
        ({"format": "other/2"}, "invalid_recording"),
        ({"sessionId": "s2"}, "invalid_recording"),
        ({"roverId": ""}, "invalid_recording"),
        ({"video": {"file": "../../etc/passwd", "offsetMs": 0}}, "unsafe_path"),
        ({"video": {"file": "/etc/passwd", "offsetMs": 0}}, "unsafe_path"),
        ({"video": {"file": "missing.webm", "offsetMs": 0}}, "invalid_recording"),
        ({"commandRoles": {"stop": "brake"}}, "invalid_recording"),
    ],
)
def test_bad_session_json(tmp_path: Path, meta: dict, code: str) -> None:
    make_session(tmp_path, **meta)
    with pytest.raises(SkipSession) as caught:
        load_recording(tmp_path, "s1")
    assert caught.value.code == code


def test_symlinked_files_and_folders_are_refused(tmp_path: Path) -> None:
    directory = make_session(tmp_path)
    outside = tmp_path / "outside.webm"
    outside.write_bytes(b"secret")
    (directory / "camera.webm").unlink()
    (directory / "camera.webm").symlink_to(outside)
    with pytest.raises(SkipSession) as caught:
        load_recording(tmp_path, "s1")
    assert caught.value.code == "unsafe_path"
    elsewhere = tmp_path / "elsewhere"
    make_session(elsewhere, "s3")
    (tmp_path / "recordings" / "s3").symlink_to(elsewhere / "recordings" / "s3")
    with pytest.raises(SkipSession) as caught:
        load_recording(tmp_path, "s3")
    assert caught.value.code == "unsafe_path"


def test_fifo_video_is_refused(tmp_path: Path) -> None:
    directory = make_session(tmp_path)
    (directory / "camera.webm").unlink()
    os.mkfifo(directory / "camera.webm")
    with pytest.raises(SkipSession) as caught:
        load_recording(tmp_path, "s1")
    assert caught.value.code == "unsafe_path"


def test_traversal_ids_are_refused(tmp_path: Path) -> None:
    (tmp_path / "recordings").mkdir()
    for session_id in ["..", "../x", "/etc", "a\x00b"]:
        with pytest.raises(SkipSession) as caught:
            load_recording(tmp_path, session_id)
        assert caught.value.code == "unsafe_path"


def test_command_log_counts_bad_lines() -> None:
    log = parse_command_log(
        "\n".join(
            [
                '{"t": 1000, "type": "drive", "values": {"speed": 0.5}}',
                "not json",
                '{"t": NaN, "type": "drive"}',
                '{"t": 1e999, "type": "drive"}',
                '{"t": 1200, "type": 3}',
                '{"t": 1300, "type": "drive", "values": {"speed": "fast"}}',
                '{"t": 900, "type": "stop"}',
                '{"t": -500, "type": "stop"}',
                '{"t": 1400, "type": "drive", "values": {"speed": 2.5}}',
            ]
        )
    )
    assert log.invalid_lines == 6 and log.lines == 9
    assert log.dropped == {
        "invalid_json": 2, "number_out_of_range": 1, "invalid_command": 2, "time_backwards": 1,
    }  # fmt: skip
    assert [c.t for c in log.commands] == [900, 1000, 1400]
    assert log.commands[-1].values["speed"] == 1.0 and log.clipped_values == 1
