from __future__ import annotations

import json
from pathlib import Path

from rovertrain.data.partition import is_held_out
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
