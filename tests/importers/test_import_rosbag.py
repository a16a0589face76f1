"""`rovertrain import rosbag` end to end on real bags written in the tests (ROS 1, ROS 2 SQLite
and MCAP), with the real message definitions."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from conftest import Result
from importers.rosbags_data import (
    NS,
    START_NS,
    STORAGES,
    Msg,
    drive,
    joy,
    picture,
    twist,
    write_bag,
)
from importers.schemas import check_recording

Cli = Callable[..., Result]
MS = 1_000_000


def bag_path(folder: Path, name: str, storage: str) -> Path:
    return folder / (f"{name}.bag" if storage == "rosbag1" else f"{name}-{storage}")


def recording(root: Path, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = root / "recordings" / session_id
    meta = json.loads((folder / "session.json").read_text())
    lines = (folder / "commands.ndjson").read_text().splitlines()
    return meta, [json.loads(line) for line in lines]


def frames(path: Path) -> list[tuple[int, np.ndarray]]:
    with av.open(str(path)) as container:
        return [
            (round(frame.time * 1000), frame.to_ndarray(format="rgb24").astype(int))
            for frame in container.decode(video=0)
        ]


def by_source(result: Result) -> dict[str, dict[str, Any]]:
    return {Path(event["source"]).name: event for event in result.of("imported")}


def test_every_storage_becomes_a_recording_timed_by_the_camera_stamps(
    cli: Cli, tmp_path: Path
) -> None:
    bags = [write_bag(bag_path(tmp_path, "d", s), s, drive()) for s in STORAGES]
    bags.append(write_bag(tmp_path / "lz4.bag", "rosbag1", drive(), compress=True))
    bags.append(write_bag(tmp_path / "zstd-sqlite3", "sqlite3", drive(), compress=True))
    root = tmp_path / "root"
    result = cli("import", "rosbag", *map(str, bags), "--out", str(root))
    assert result.code == 0, result.stderr
    assert result.kinds() == ["imported"] * 5 + ["complete"]
    ids = set()
    for event in result.of("imported"):
        assert event["frames"] == 120 and event["dropped"] == {}
        assert event["bag"]["clock"] == {
            "/camera/image_raw/compressed": "header",
            "/cmd_vel": "receive",
        }
        assert event["bag"]["commandTopics"] == {"/cmd_vel": "human"}
        check_recording(Path(event["path"]))
        ids.add(event["sessionId"])
        meta, commands = recording(root, event["sessionId"])
        assert meta["controlProfile"] == "ros" and meta["video"]["offsetMs"] == 0.0
        assert "drivenBy" not in meta  # a person drove it all
        # 0.25 m/s at teleop_twist_keyboard's 0.5 m/s is 0.5; 0.5 rad/s of its 1.0 rad/s
        assert commands[0] == {"t": 0.0, "type": "drive", "values": {"speed": 0.5, "turn": 0.0}}
        assert {"t": 1000.0, "type": "drive", "values": {"speed": 0.5, "turn": 0.5}} in commands
        # zeros for the last second: a stop, held (re-sent every 500 ms, as a page's key)
        assert [c["t"] for c in commands if c["type"] == "stop"] == [3000.0, 3500.0]
        shown = frames(Path(event["path"]) / "camera.webm")
        # the header stamps (the capture), not the receive times 20 ms later
        assert [t for t, _ in shown[:4]] == [0, 33, 67, 100]
        assert np.abs(shown[30][1] - picture(30)).mean() < 20
    # the same drive in five bags: the id says when it was taken, not the file's name
    assert len({session_id.rsplit("-", 1)[0] for session_id in ids}) == 1
    assert all(session_id.startswith("rosbag-20251130-") for session_id in ids)

    inspected = cli("inspect", str(root))
    assert inspected.code == 0, inspected.stderr
    assert not inspected.of("skipped") and len(inspected.of("dataset")) == 1  # one id


@pytest.mark.parametrize("storage", STORAGES)
def test_every_command_type_becomes_drive_and_stop(cli: Cli, tmp_path: Path, storage: str) -> None:
    bags = []
    for command in ("twist_stamped", "ackermann", "joy"):
        messages = drive(seconds=3.0, kind="png" if command == "joy" else "rgb8", command=command)
        bags.append(write_bag(bag_path(tmp_path, command, storage), storage, messages))
    root = tmp_path / "root"
    result = cli("import", "rosbag", *map(str, bags), "--out", str(root))
    assert result.code == 0, result.stderr
    events = {name.split("-")[0].removesuffix(".bag"): e for name, e in by_source(result).items()}
    assert set(events) == {"twist_stamped", "ackermann", "joy"}
    expected = {  # drive() wishes 0.25 m/s, then a turn of 0.5 (rad/s, rad, stick)
        "twist_stamped": {"speed": 0.5, "turn": 0.5},
        "ackermann": {"speed": 0.25, "turn": 1.0},  # 0.5 rad of 0.4 rad: clipped
        "joy": {"speed": 0.5, "turn": 0.5},
    }
    for command, event in events.items():
        _, commands = recording(root, event["sessionId"])
        drives = [c["values"] for c in commands if c["type"] == "drive"]
        assert drives[0]["turn"] == 0.0 and expected[command] in drives, (command, commands)
        assert [c["t"] for c in commands if c["type"] == "stop"] == [2000.0, 2500.0]
        stamped = command != "twist"
        assert event["bag"]["clock"][event["bag"]["imageTopic"]] == "header"
        topic = next(iter(event["bag"]["commandTopics"]))
        assert event["bag"]["clock"][topic] == ("header" if stamped else "receive")


def test_raw_encodings_each_keep_the_picture(cli: Cli, tmp_path: Path) -> None:
    encodings = ("rgb8", "bgr8", "rgba8", "mono8")
    bags = [
        write_bag(
            tmp_path / f"{e}-mcap",
            "mcap",
            drive(seconds=2.0, kind=e, image_topic="/cam", start_ns=START_NS + n * 60 * NS),
        )
        for n, e in enumerate(encodings)
    ]
    root = tmp_path / "root"
    result = cli("import", "rosbag", *map(str, bags), "--out", str(root))
    assert result.code == 0, result.stderr
    for name, event in by_source(result).items():
        assert event["frames"] == 60, name
        shown = frames(Path(event["path"]) / "camera.webm")
        expected = picture(10)
        if name.startswith("mono8"):
            expected = np.repeat(expected.mean(axis=2, keepdims=True), 3, axis=2)
        assert np.abs(shown[10][1] - expected).mean() < 20, name


def test_a_second_import_writes_nothing_and_a_dry_run_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    bag = write_bag(tmp_path / "d-sqlite3", "sqlite3", drive(seconds=2.0))
    root = tmp_path / "root"
    dry = cli("import", "rosbag", str(bag), "--out", str(root), "--dry-run")
    assert dry.code == 0, dry.stderr
    assert not (root / "recordings").exists()
    listed = dry.of("imported")[0]
    assert listed["dryRun"] is True and listed["frames"] == 60
    rows = {row["name"]: row for row in listed["bag"]["topics"]}
    assert rows["/cmd_vel"]["type"] == "geometry_msgs/Twist"
    assert rows["/cmd_vel"]["messages"] == 40 and 19 < rows["/cmd_vel"]["hz"] < 21
    first = cli("import", "rosbag", str(bag), "--out", str(root))
    again = cli("import", "rosbag", str(bag), "--out", str(root))
    assert first.of("imported")[0]["sessionId"] == listed["sessionId"]
    assert again.of("imported")[0]["existing"] is True
    assert again.last()["imports"]["written"] == 0


def test_a_pause_splits_a_bag_and_late_or_unstamped_frames_are_handled(
    cli: Cli, tmp_path: Path
) -> None:
    later = START_NS + 30 * NS
    messages = drive(seconds=2.0) + drive(seconds=2.0, start_ns=later)
    # frames 10 and 11 reach the recorder in the wrong order; frame 20's stamp repeats 19's
    cameras = [m for m in messages if m.topic.startswith("/camera")]
    cameras[10].receive_ns, cameras[11].receive_ns = cameras[11].receive_ns, cameras[10].receive_ns
    duplicate = cameras[19]
    messages.append(
        Msg(duplicate.topic, duplicate.msgtype, duplicate.receive_ns + 1, duplicate.build)
    )
    bag = write_bag(tmp_path / "split-mcap", "mcap", messages)
    root = tmp_path / "root"
    result = cli("import", "rosbag", str(bag), "--out", str(root))
    assert result.code == 0, result.stderr
    parts = result.of("imported")
    assert [p["bag"]["part"] for p in parts] == [1, 2] and parts[0]["bag"]["parts"] == 2
    assert parts[0]["sessionId"] != parts[1]["sessionId"]
    assert parts[0]["frames"] == 60 and parts[0]["dropped"] == {"duplicate_time": 1}
    assert parts[1]["frames"] == 60 and parts[1]["dropped"] == {}
    times = [t for t, _ in frames(Path(parts[0]["path"]) / "camera.webm")]
    assert times == sorted(times) and len(times) == 60
    _, commands = recording(root, parts[1]["sessionId"])
    assert commands[0]["t"] == 0.0  # the second part on its own clock

    # a simulator's stamps (seconds since it started) are not the recorder's clock
    sim = drive(seconds=2.0)
    for message in sim:
        if message.topic.startswith("/camera"):
            number = round((message.receive_ns - START_NS) / (NS / 30))
            message.build = stamped_at(message, number * NS // 30 + NS)
    bag = write_bag(tmp_path / "sim-mcap", "mcap", sim)
    result = cli("import", "rosbag", str(bag), "--out", str(tmp_path / "sim"))
    event = result.of("imported")[0]
    assert event["bag"]["clock"]["/camera/image_raw/compressed"] == "receive"
    assert event["frames"] == 60


def stamped_at(message: Msg, stamp_ns: int) -> Callable[[Any], object]:
    build = message.build

    def rebuilt(store: Any) -> object:
        built: Any = build(store)
        built.header.stamp = store.types["builtin_interfaces/msg/Time"](
            sec=stamp_ns // NS, nanosec=stamp_ns % NS
        )
        return built

    return rebuilt


def test_a_supervised_drive_under_twist_mux_gives_policy_marks_and_take_overs(
    cli: Cli, tmp_path: Path
) -> None:
    messages = [m for m in drive(seconds=8.0) if not m.topic.startswith("/cmd_vel")]
    # the policy drives from the start; the person takes over at 3 s for 2 s; the policy
    # drives again until the end
    for n in range(160):
        t = START_NS + n * NS // 20
        messages.append(twist("/cmd_vel_nav", t, 0.25, 0.1))
        if 3 * NS <= t - START_NS < 5 * NS:
            messages.append(twist("/cmd_vel_joy", t + MS, 0.25, -0.4))
        messages.append(twist("/cmd_vel", t + 2 * MS, 0.25, 0.0))  # the mux's output
    bag = write_bag(tmp_path / "mux-mcap", "mcap", messages)
    mapping = tmp_path / "map.json"
    mapping.write_text(
        json.dumps(
            {
                "commands": [
                    {"topic": "/cmd_vel_joy", "by": "human"},
                    {"topic": "/cmd_vel_nav", "by": "policy"},
                ]
            }
        )
    )
    root = tmp_path / "root"
    unmapped = cli("import", "rosbag", str(bag), "--out", str(root), "--dry-run")
    skipped = unmapped.of("skipped")[0]
    assert skipped["code"] == "invalid_recording" and "several command topics" in skipped["reason"]
    model = "3f0c9a52-model"
    result = cli(
        "import", "rosbag", str(bag), "--out", str(root), "--map", str(mapping),
        "--driven-by", model,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    event = result.of("imported")[0]
    assert event["bag"]["commandTopics"] == {"/cmd_vel_joy": "human", "/cmd_vel_nav": "policy"}
    meta, commands = recording(root, event["sessionId"])
    assert meta["drivenBy"] == {"model": model}  # whose take-overs the field figures count
    senders = [(c["t"], c.get("by", "human")) for c in commands]
    assert senders[0] == (0.0, "policy")
    assert (3001.0, "human") in senders  # the take-over, at once
    back = [t for t, by in senders if by == "policy" and t > 3001]
    assert back and 5450 <= back[0] <= 5550  # the mux lets the policy through 0.5 s later
    inspected = cli("inspect", str(root))
    diagnostics = inspected.of("dataset")[0]["diagnostics"]
    assert diagnostics["takeOvers"] == 1
    assert 40 <= diagnostics["autonomousWindows"] <= 65


def test_damaged_bags_are_skipped_and_the_others_imported(cli: Cli, tmp_path: Path) -> None:
    good = write_bag(tmp_path / "good.bag", "rosbag1", drive(seconds=2.0))
    truncated = tmp_path / "truncated.bag"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.bag"
    garbage.write_bytes(b"#ROSBAG V2.0\n" + os.urandom(2000))
    not_a_bag = tmp_path / "notes.txt"
    not_a_bag.write_text("hello")
    broken_db = write_bag(tmp_path / "db-sqlite3", "sqlite3", drive(seconds=2.0))
    database = next(broken_db.glob("*.db3"))
    database.write_bytes(database.read_bytes()[:4096])
    broken_mcap = write_bag(tmp_path / "m-mcap", "mcap", drive(seconds=2.0))
    mcap = next(broken_mcap.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])
    no_metadata = tmp_path / "folder"
    no_metadata.mkdir()
    bags = [truncated, garbage, not_a_bag, broken_db, good, broken_mcap, no_metadata]
    bags.append(tmp_path / "missing.bag")
    root = tmp_path / "root"
    result = cli("import", "rosbag", *map(str, bags), "--out", str(root))
    assert result.code == 0, result.stderr
    assert [Path(e["source"]).name for e in result.of("imported")] == ["good.bag"]
    skipped = {Path(e["source"]).name: e for e in result.of("skipped")}
    assert set(skipped) == {b.name for b in bags} - {"good.bag"}
    assert skipped["missing.bag"]["code"] == "missing_recording"
    assert "metadata.yaml" in skipped["folder"]["reason"]
    assert "not a ROS 1 bag" in skipped["notes.txt"]["reason"]
    for name in ("truncated.bag", "garbage.bag", "db-sqlite3", "m-mcap"):
        assert skipped[name]["code"] == "invalid_recording", skipped[name]
        assert skipped[name]["reason"], name
    assert result.last()["imports"]["skipped"] == len(bags) - 1
    assert not [p for p in (root / "recordings").iterdir() if p.name.startswith(".")]


def test_bags_without_a_usable_topic_say_why(cli: Cli, tmp_path: Path) -> None:
    cameras_only = [m for m in drive(seconds=2.0) if m.topic.startswith("/camera")]
    commands_only = [m for m in drive(seconds=2.0) if not m.topic.startswith("/camera")]
    two_pads = drive(seconds=2.0, command="joy") + [
        joy("/joy2", START_NS + n * NS // 10, START_NS, [0.0, 0.5], [1]) for n in range(10)
    ]
    bags = [
        write_bag(tmp_path / "cameras-mcap", "mcap", cameras_only),
        write_bag(tmp_path / "commands-mcap", "mcap", commands_only),
        write_bag(tmp_path / "pads-mcap", "mcap", two_pads),
    ]
    result = cli("import", "rosbag", *map(str, bags), "--out", str(tmp_path / "root"))
    assert result.code == 0, result.stderr
    skipped = {Path(e["source"]).name: e for e in result.of("skipped")}
    assert "no command topic" in skipped["cameras-mcap"]["reason"]
    assert skipped["commands-mcap"]["code"] == "no_video"
    assert "/cmd_vel (geometry_msgs/Twist, 40)" in skipped["commands-mcap"]["reason"]
    assert "several command topics (/joy, /joy2)" in skipped["pads-mcap"]["reason"]
    # a topic of a type without default values: the map must say which fields
    named = cli(
        "import",
        "rosbag",
        str(bags[0]),
        "--out",
        str(tmp_path / "root"),
        "--command-topic",
        "/camera/image_raw/compressed",
    )
    assert "no default values" in named.of("skipped")[0]["reason"]


@pytest.mark.parametrize(
    ("text", "words"),
    [("{", "--map"), ('{"commands": [{"topic": "cmd_vel"}]}', "/commands/0/topic")],
)
def test_a_bad_map_file_is_a_usage_error(cli: Cli, tmp_path: Path, text: str, words: str) -> None:
    mapping = tmp_path / "map.json"
    mapping.write_text(text)
    bag = write_bag(tmp_path / "d.bag", "rosbag1", drive(seconds=1.0))
    result = cli("import", "rosbag", str(bag), "--out", str(tmp_path / "r"), "--map", str(mapping))
    assert result.code == 2
    assert result.last()["kind"] == "error" and words in result.last()["message"]


def test_a_maps_fields_and_a_dead_man_button(cli: Cli, tmp_path: Path) -> None:
    messages = [m for m in drive(seconds=3.0) if m.topic.startswith("/camera")]
    for n in range(60):  # the stick held forward; the button released after 1.5 s
        t = START_NS + n * NS // 20
        pressed = 1 if n < 30 else 0
        messages.append(joy("/joy", t, t, [0.0, 0.0, 0.0, -0.8], [0, pressed]))
    bag = write_bag(tmp_path / "pad-mcap", "mcap", messages)
    mapping = tmp_path / "map.json"
    entry = {
        "topic": "/joy",
        "enableButton": 1,
        "values": {"throttle": {"field": "axes.3", "scale": -1}},
    }
    mapping.write_text(json.dumps({"commands": [entry]}))
    root = tmp_path / "root"
    result = cli("import", "rosbag", str(bag), "--out", str(root), "--map", str(mapping))
    assert result.code == 0, result.stderr
    _, commands = recording(root, result.of("imported")[0]["sessionId"])
    assert commands[0] == {"t": 0.0, "type": "drive", "values": {"throttle": 0.8}}
    assert [c["t"] for c in commands if c["type"] == "stop"] == [1500.0, 2000.0, 2500.0]


def test_unreadable_messages_are_counted_and_the_rest_imported(cli: Cli, tmp_path: Path) -> None:
    bag = write_bag(tmp_path / "rows-sqlite3", "sqlite3", drive(seconds=2.0))
    database = next(bag.glob("*.db3"))
    with sqlite3.connect(database) as connection:
        topics = dict(connection.execute("SELECT name, id FROM topics"))
        camera = topics["/camera/image_raw/compressed"]
        # three pictures and two commands that their definitions cannot read
        for table_id, count in ((camera, 3), (topics["/cmd_vel"], 2)):
            rows = connection.execute(
                "SELECT id FROM messages WHERE topic_id = ? ORDER BY timestamp LIMIT ? OFFSET 20",
                (table_id, count),
            ).fetchall()
            for (row,) in rows:
                connection.execute("UPDATE messages SET data = x'00' WHERE id = ?", (row,))
    result = cli("import", "rosbag", str(bag), "--out", str(tmp_path / "root"))
    assert result.code == 0, result.stderr
    event = result.of("imported")[0]
    assert event["dropped"] == {"undecodable_message": 5}
    assert event["frames"] == 57
    shown = frames(Path(event["path"]) / "camera.webm")
    # frames 20-22 left a gap; every other frame is at its own time with its own picture
    assert [t for t, _ in shown[19:21]] == [round(19 * 1000 / 30), round(23 * 1000 / 30)]
    distance = [np.abs(shown[25][1] - picture(n)).mean() for n in (25, 28)]
    assert distance[1] < distance[0]
