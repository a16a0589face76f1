from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from rovertrain.data.partition import is_held_out
from rovertrain.sim.keyboard import REPEAT_MS
from rovertrain.sim.synth import session_ids


def decoded(path: Path) -> list:
    import av

    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def test_synth_is_deterministic_for_a_seed(cli, tmp_path: Path) -> None:
    roots = []
    for name in ("a", "b"):
        root = tmp_path / name
        result = cli("synth", "--out", str(root), "--sessions", "2", "--minutes", "0.1",
                     "--seed", "11")  # fmt: skip
        assert result.code == 0 and result.kinds() == ["synthesized"]
        roots.append(root)
    for session in json.loads((roots[0] / "job.json").read_text())["sessions"]:
        for file in ("commands.ndjson", "session.json"):
            first = (roots[0] / "recordings" / session / file).read_bytes()
            second = (roots[1] / "recordings" / session / file).read_bytes()
            assert first == second, file
        # The WebM muxer writes a random segment UID, so compare what the camera shows.
        first_frames = decoded(roots[0] / "recordings" / session / "camera.webm")
        second_frames = decoded(roots[1] / "recordings" / session / "camera.webm")
        assert len(first_frames) == len(second_frames) > 0
        assert all((a == b).all() for a, b in zip(first_frames, second_frames, strict=True))


def test_synth_job_is_valid_and_holds_out_sessions(synth_data: Path, cli) -> None:
    job = json.loads((synth_data / "job.json").read_text())
    assert cli("validate-job", str(synth_data / "job.json")).code == 0
    assert sum(is_held_out(s) for s in job["sessions"]) == 2


def test_session_ids_hold_out_a_fifth_and_at_least_two() -> None:
    for count, held in ((4, 2), (12, 2), (20, 4), (3, 0)):
        ids = session_ids(count, 5)
        assert len(set(ids)) == count and sum(map(is_held_out, ids)) == held


def test_synth_recordings_match_the_published_schemas(synth_data: Path) -> None:
    from jsonschema import Draft202012Validator

    from conftest import REPO

    session_schema = Draft202012Validator(
        json.loads((REPO / "schemas" / "session.schema.json").read_text())
    )
    command_schema = Draft202012Validator(
        json.loads((REPO / "schemas" / "command.schema.json").read_text())
    )
    for folder in (synth_data / "recordings").iterdir():
        session_schema.validate(json.loads((folder / "session.json").read_text()))
        for line in (folder / "commands.ndjson").read_text().splitlines():
            command_schema.validate(json.loads(line))


# Recorded with the synth as it was before the simulator became steppable (commit 106eabd):
# the same seed must still give the same commands and the same pictures.
BEFORE_THE_REFACTOR = {
    "drive-7-0001": (
        "649b4c6ba4607c17eba93337cb6661b8947f2049a8a110175d904cc5f585be2f",
        797,
        "3864174c1c4bc35dddffed946321311ce27466c095e3f33ebf8e024aecaa6518",
    ),
    "drive-7-0002": (
        "aadc41b5999c086867aabfac8a77a433cf5f96f5d0afdff917ed0385beb9ebc1",
        959,
        "86451d16558559967ce06c4682635c97361c75c866e671620e174bf4f87626fb",
    ),
}


class PixelHash:
    def __init__(self) -> None:
        import hashlib

        self.digest = hashlib.sha256()
        self.frames = 0

    def __call__(self, image: np.ndarray) -> None:
        self.digest.update(image.tobytes())
        self.frames += 1


def test_road_sessions_are_identical_to_the_synth_before_the_refactor() -> None:
    import hashlib
    import random

    from rovertrain.sim.synth import PROFILES, simulate_session
    from rovertrain.sim.worlds import build

    for index, (session_id, expected) in enumerate(BEFORE_THE_REFACTOR.items()):
        # write_session's draws, in its order.
        rng = random.Random(f"7:{session_id}")
        fps = rng.choice((15, 20, 24))
        offset = round(rng.uniform(40, 160), 1)
        scenario = build("road", rng, PROFILES[index % 2], rng.randrange(2**32))
        pixels = PixelHash()
        commands = simulate_session(scenario, 40.0, offset, fps, pixels)
        text = "".join(json.dumps(item) + "\n" for item in commands)
        assert '"stop"' in text  # the comparison covers cones and stops
        assert hashlib.sha256(text.encode()).hexdigest() == expected[0], session_id
        assert pixels.frames == expected[1]
        assert pixels.digest.hexdigest() == expected[2], session_id


def test_synth_writes_a_road_session_byte_for_byte_as_before(tmp_path: Path) -> None:
    import hashlib

    from rovertrain.sim.recorder import SessionTask
    from rovertrain.sim.synth import write_session

    result = write_session(SessionTask(tmp_path, "drive-7-0001", 0, 7, 0.3), False)
    folder = tmp_path / "recordings" / "drive-7-0001"
    commands = (folder / "commands.ndjson").read_bytes()
    assert (
        hashlib.sha256(commands).hexdigest()
        == "32c139077b7b7e8930fd1c2c4a7bdc34e9c5eece8aefe3b4ba479087f612b2a2"
    )
    assert result["frames"] == 357 == len(decoded(folder / "camera.webm"))
    assert (
        hashlib.sha256((folder / "session.json").read_bytes()).hexdigest()
        == "6f5a91e3b1c21668147f8bd40561ab10c2b1586488ae9a7aca1b9508b7412fdd"
    )


def test_warehouse_recordings_load_with_the_horn_and_both_codecs(cli, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    result = cli("synth", "--out", str(root), "--world", "warehouse", "--sessions", "2",
                 "--minutes", "0.3", "--seed", "2")  # fmt: skip
    assert result.code == 0, result.stderr
    written = result.last()
    assert written["world"] == "warehouse"
    assert {s["codec"] for s in written["sessions"]} == {"libx264", "libvpx-vp9"}
    horns = 0
    for session in written["sessions"]:
        folder = root / "recordings" / session["sessionId"]
        meta = json.loads((folder / "session.json").read_text())
        assert meta["commandRoles"]["horn"] == "other"
        assert len(decoded(folder / meta["video"]["file"])) == session["frames"] > 0
        lines = (folder / "commands.ndjson").read_text().splitlines()
        horns += sum(json.loads(line)["type"] == "horn" for line in lines)
    assert horns > 0
    inspected = cli("inspect", str(root))
    assert inspected.code == 0, inspected.stderr
    summary = inspected.last()
    assert summary["sessions"] == 2 and summary["skipped"] == 0
    roles = {slot["type"]: slot["role"] for slot in summary["schema"]}
    assert roles == {"stop": "stop", "drive": "movement", "horn": "other"}


@pytest.mark.parametrize(
    ("world", "levels", "profile"),
    [
        ("warehouse", {"speed": {0.0, 0.5}, "turn": {-1.0, 0.0, 1.0}}, "keyboard-page"),
        (
            "carracing",
            {"throttle": {-0.6, 0.0, 0.4}, "turn": {-0.6, 0.0, 0.6}},
            "scripted-keyboard",
        ),
    ],
)
def test_the_keyboard_driver_records_the_pages_levels_only(
    cli, tmp_path: Path, world: str, levels: dict[str, set[float]], profile: str
) -> None:
    if world == "carracing":
        pytest.importorskip("Box2D")
    root = tmp_path / "root"
    args = ("--world", world, "--driver", "keyboard", "--sessions", "1", "--minutes", "0.5")
    result = cli("synth", "--out", str(root), *args)
    assert result.code == 0, result.stderr
    assert result.last()["driver"] == "keyboard"
    (folder,) = (root / "recordings").iterdir()
    assert json.loads((folder / "session.json").read_text())["controlProfile"] == profile
    lines = [json.loads(line) for line in (folder / "commands.ndjson").read_text().splitlines()]
    drives = [line for line in lines if line["type"] == "drive"]
    for name, allowed in levels.items():
        sent = {line["values"][name] for line in drives}
        assert sent <= allowed, (name, sent)
    # The turn is tapped: the full turn goes out and comes back more than a few times.
    turns = [line["values"]["turn"] for line in drives]
    assert sum(a != b for a, b in itertools.pairwise(turns)) > 6
    # A held key repeats: after a command with the gas held the next comes within the repeat.
    held = [
        b["t"] - a["t"]
        for a, b in itertools.pairwise(lines)
        if a["type"] == "drive" and (a["values"].get("speed") or a["values"].get("throttle"))
    ]
    assert held and max(held) <= REPEAT_MS + 30
