"""`rovertrain import donkey` end to end on tubs written in code."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import av
import pytest

from conftest import Result
from importers.schemas import check_recording
from importers.tubs import Row, drive_rows, jpeg, picture, write_tub

Cli = Callable[..., Result]


def recording(root: Path, session_id: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    folder = root / "recordings" / session_id
    meta = json.loads((folder / "session.json").read_text())
    lines = (folder / "commands.ndjson").read_text().splitlines()
    return meta, [json.loads(line) for line in lines]


def frame_times(path: Path) -> list[int]:
    with av.open(str(path)) as container:
        return [round(frame.time * 1000) for frame in container.decode(video=0)]


def test_a_tub_becomes_a_recording_that_inspect_accepts(cli: Cli, tmp_path: Path) -> None:
    rows = drive_rows(6.0)
    tub = write_tub(tmp_path / "tub", rows, deleted=[5, 6], max_len=50)
    root = tmp_path / "root"
    result = cli("import", "donkey", str(tub), "--out", str(root))
    assert result.code == 0, result.stderr
    assert result.kinds() == ["imported", "complete"]
    imported = result.of("imported")[0]
    session_id = imported["sessionId"]
    assert imported["frames"] == len(rows) - 2
    assert imported["dropped"] == {"deleted": 2}
    assert imported["dryRun"] is False and imported["existing"] is False
    assert result.last()["accepted"] == [session_id]
    assert result.last()["imports"]["written"] == 1

    check_recording(root / "recordings" / session_id)
    meta, commands = recording(root, session_id)
    assert meta["commandRoles"] == {"stop": "stop", "drive": "movement"}
    assert meta["video"] == {"file": "camera.webm", "offsetMs": 0.0}
    assert len(commands) == imported["commands"]
    assert {c["type"] for c in commands} == {"drive", "stop"}
    assert all(set(c["values"]) == {"angle", "throttle"} for c in commands if c["type"] == "drive")
    # Real timestamps: the deleted records are a gap (100 ms between frames 4 and 7), not
    # fabricated frames.
    times = frame_times(root / "recordings" / session_id / "camera.webm")
    expected = [
        r.timestamp_ms - rows[0].timestamp_ms for i, r in enumerate(rows) if i not in (5, 6)
    ]
    assert times == expected

    inspected = cli("inspect", str(root))
    assert inspected.code == 0, inspected.stderr
    assert not inspected.of("skipped")
    dataset = inspected.of("dataset")[0]
    assert dataset["sessionId"] == session_id
    assert dataset["diagnostics"]["invalidCommandLines"] == 0
    assert dataset["diagnostics"]["categories"]["stop"] >= 1
    assert dataset["diagnostics"]["categories"]["command"] > 10


def test_importing_again_creates_nothing_new_and_dry_run_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    tub = write_tub(tmp_path / "tub", drive_rows(2.0))
    root = tmp_path / "root"
    dry = cli("import", "donkey", str(tub), "--out", str(root), "--dry-run")
    assert dry.code == 0, dry.stderr
    assert dry.of("imported")[0]["dryRun"] is True
    assert not (root / "recordings").exists() or not any((root / "recordings").iterdir())
    first = cli("import", "donkey", str(tub), "--out", str(root))
    session_id = first.of("imported")[0]["sessionId"]
    assert session_id == dry.of("imported")[0]["sessionId"]
    assert first.of("imported")[0]["frames"] == dry.of("imported")[0]["frames"]
    before = {p: p.stat().st_mtime_ns for p in (root / "recordings").rglob("*")}
    # The same tub copied elsewhere is the same source.
    copy = tmp_path / "elsewhere" / "renamed"
    copy.parent.mkdir()
    os.rename(tub, copy)
    second = cli("import", "donkey", str(copy), "--out", str(root))
    assert second.code == 0, second.stderr
    again = second.of("imported")[0]
    assert again["sessionId"] == session_id and again["existing"] is True
    assert second.last()["imports"] == {**second.last()["imports"], "written": 0, "existing": 1}
    assert {p: p.stat().st_mtime_ns for p in (root / "recordings").rglob("*")} == before


def test_sessions_pilot_records_and_old_tubs(cli: Cli, tmp_path: Path) -> None:
    first = drive_rows(2.0, session="26-11-30_0")
    second = drive_rows(2.0, start_ms=first[-1].timestamp_ms + 60_000, session="26-11-30_1")
    for row in second[10:20]:
        row.mode = "local"  # the autopilot drove: not the human's
    for row in second[20:25]:
        row.mode = "local_angle"
    tub = write_tub(tmp_path / "tub", [*first, *second])
    old = write_tub(tmp_path / "old", [Row(r.timestamp_ms, r.angle, r.throttle, session=None)
                                       for r in drive_rows(1.0)])  # fmt: skip
    result = cli("import", "donkey", str(tub), str(old), "--out", str(tmp_path / "root"))
    assert result.code == 0, result.stderr
    imported = result.of("imported")
    assert len(imported) == 3
    by_label = {event["sessionId"].rsplit("-", 1)[0]: event for event in imported}
    assert set(by_label) == {"donkey-26-11-30_0", "donkey-26-11-30_1", "donkey-old"}
    assert by_label["donkey-26-11-30_1"]["dropped"] == {"pilot": 15}
    assert by_label["donkey-26-11-30_1"]["frames"] == len(second) - 15


def test_damaged_tubs_import_what_is_sound(cli: Cli, tmp_path: Path) -> None:
    rows = drive_rows(4.0)
    rows[30].timestamp_ms = rows[29].timestamp_ms - 500  # clock went backwards
    rows[62].timestamp_ms = rows[61].timestamp_ms  # the same time twice
    tub = write_tub(tmp_path / "tub", rows, max_len=20)
    (tub / "images" / "3_cam_image_array_.jpg").unlink()
    (tub / "images" / "4_cam_image_array_.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    (tub / "images" / "5_cam_image_array_.jpg").write_bytes(jpeg(picture(5))[:200])
    with open(tub / "images" / "6_cam_image_array_.jpg", "wb") as huge:
        huge.truncate(17 << 20)
    os.symlink("/etc/passwd", tub / "images" / "7_cam_image_array_.jpg.link")
    (tub / "images" / "7_cam_image_array_.jpg").unlink()
    os.rename(
        tub / "images" / "7_cam_image_array_.jpg.link", tub / "images" / "7_cam_image_array_.jpg"
    )
    (tub / "catalog_2.catalog").unlink()  # records 40-59: a lost catalog
    catalog = tub / "catalog_3.catalog"
    catalog.write_bytes(catalog.read_bytes()[:-40])  # truncated mid-record
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("not json\n")
    missing = tmp_path / "missing"

    root = tmp_path / "root"
    result = cli("import", "donkey", str(tub), str(broken), str(missing), "--out", str(root))
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr
    skipped = {event["source"]: event for event in result.of("skipped")}
    assert skipped[str(broken)]["code"] == "invalid_recording"
    assert skipped[str(missing)]["code"] == "missing_recording"
    imported = result.of("imported")[0]
    assert imported["dropped"] == {
        "time_backwards": 1,
        "duplicate_time": 1,
        "missing_image": 1,
        "corrupt_image": 2,
        "too_large": 1,
        "unsafe_path": 1,
        "unreadable_catalog": 20,
        "invalid_record": 1,
    }
    assert imported["frames"] == len(rows) - 28
    assert result.last()["imports"]["skipped"] == 2
    assert set(result.last()["rejected"]) == {skipped[str(broken)]["sessionId"],
                                              skipped[str(missing)]["sessionId"]}  # fmt: skip
    inspected = cli("inspect", str(root))
    assert inspected.code == 0 and not inspected.of("skipped")


def test_a_tub_with_no_human_driving_is_skipped(cli: Cli, tmp_path: Path) -> None:
    rows = drive_rows(1.0)
    for row in rows:
        row.mode = "local"
    tub = write_tub(tmp_path / "tub", rows)
    result = cli("import", "donkey", str(tub), "--out", str(tmp_path / "root"))
    assert result.code == 0
    assert result.kinds() == ["skipped", "complete"]
    assert result.of("skipped")[0]["code"] == "no_windows"
    assert "pilot" in result.of("skipped")[0]["reason"]


@pytest.mark.parametrize("args", [[], ["--out"], ["--tolerance", "-1", "--out", "x", "t"]])
def test_usage_errors_exit_2(cli: Cli, args: list[str]) -> None:
    assert cli("import", "donkey", *args).code == 2


def test_progress_on_request_and_never_on_stdout(cli: Cli, tmp_path: Path) -> None:
    tub = write_tub(tmp_path / "tub", drive_rows(1.0))
    shown = cli("import", "donkey", str(tub), "--out", str(tmp_path / "a"), "--progress")
    assert "\rimporting donkey-26-11-30_0-" in shown.stderr
    quiet = cli("import", "donkey", str(tub), "--out", str(tmp_path / "b"))
    assert "\rimporting" not in quiet.stderr  # stderr is not a terminal here
    assert shown.kinds() == quiet.kinds() == ["imported", "complete"]
