"""`root/training/current.json`: the promoted checkpoint, verified before anyone follows it."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rovertrain.contracts.decision import DecisionRules
from rovertrain.learn.policy import Policy
from rovertrain.store.current import current_path, read_current, write_current
from rovertrain.store.publish import publish_checkpoint

MODEL_ID = "00000000-0000-0000-0000-000000000007"


def promoted(root: Path, model_id: str = MODEL_ID) -> Path:
    state = {key: value.clone() for key, value in Policy().state_dict().items()}
    publish_checkpoint(root, model_id, state, {"name": "quiet-otter", "createdAt": 1})
    write_current(root, model_id, "quiet-otter")
    return root / "training" / "checkpoints" / model_id


def test_current_points_at_a_verified_checkpoint(cli, tmp_path: Path) -> None:
    torch.manual_seed(0)
    directory = promoted(tmp_path)
    document, target, problems = read_current(tmp_path)
    assert problems == [] and target == directory
    assert document is not None and document["path"] == f"checkpoints/{MODEL_ID}"
    assert not list((tmp_path / "training").glob(".*.tmp"))
    result = cli("models", str(tmp_path), "--current")
    assert result.code == 0 and result.kinds() == ["current"]
    assert result.last()["valid"] is True and result.last()["current"]["id"] == MODEL_ID
    # A later promotion replaces the pointer as a whole.
    promoted(tmp_path, "00000000-0000-0000-0000-000000000008")
    assert read_current(tmp_path)[0]["id"] == "00000000-0000-0000-0000-000000000008"  # type: ignore[index]


def test_a_missing_or_altered_target_is_reported_never_followed(cli, tmp_path: Path) -> None:
    result = cli("models", str(tmp_path), "--current")
    assert result.last()["valid"] is False and "no checkpoint" in result.last()["problems"][0]
    directory = promoted(tmp_path)
    meta = json.loads((directory / "model.json").read_text())
    meta["name"] = "swapped"  # files still verify, but model.json is not the promoted one
    (directory / "model.json").write_text(json.dumps(meta))
    result = cli("models", str(tmp_path), "--current")
    assert result.last()["valid"] is False
    assert "sha256" in " ".join(result.last()["problems"])
    pointer = json.loads(current_path(tmp_path).read_text())
    for path in ("../../elsewhere", "/etc"):
        current_path(tmp_path).write_text(json.dumps({**pointer, "path": path}))
        assert read_current(tmp_path)[1] is None
    current_path(tmp_path).write_text(
        json.dumps({**pointer, "id": "../x", "path": "checkpoints/../x"})
    )
    assert read_current(tmp_path)[1] is None
    current_path(tmp_path).write_text(
        json.dumps({**pointer, "id": "gone", "path": "checkpoints/gone"})
    )
    assert "missing" in read_current(tmp_path)[2][0]


def test_publishing_a_promoted_candidate_moves_current_json(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from conftest import no_windows
    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.job.publication import publish

    def candidate(promote: bool) -> SimpleNamespace:
        to_json = lambda: {}  # noqa: E731
        return SimpleNamespace(
            job_id="job-1", steps=10, examples=640, training_loss=0.5,
            job=SimpleNamespace(seed=0, decision=DecisionRules(0.4, 0.15),
                                config=SimpleNamespace(to_json=to_json),
                                gate=SimpleNamespace(to_json=to_json)),
            dataset=SimpleNamespace(schema=initial_schema(), accepted=["a"], field_by_model=dict,
                                    training=no_windows()),
            evaluation=SimpleNamespace(status="passed imitation gate", to_json=to_json),
            decision=SimpleNamespace(promote=promote, distinct_minutes=3.0, to_json=to_json),
        )  # fmt: skip

    state = SimpleNamespace(trained_rovers={"r"}, control_profiles=[])
    promoted = publish(tmp_path, candidate(True), state, Policy())  # type: ignore[arg-type]
    assert read_current(tmp_path)[0]["id"] == promoted.id  # type: ignore[index]
    assert promoted.document["actionThreshold"] == 0.4
    kept = publish(tmp_path, candidate(False), state, Policy())  # type: ignore[arg-type]
    document, directory, problems = read_current(tmp_path)
    assert document is not None and document["id"] == promoted.id != kept.id
    assert directory == promoted.path and problems == []
