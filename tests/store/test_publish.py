from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rovertrain.contracts.errors import RovertrainError
from rovertrain.job.resume import load_resume, resume_path, save_resume
from rovertrain.store.catalogue import catalogue
from rovertrain.store.publish import publish_checkpoint, remove_stale_staging

STATE = {"layer.weight": torch.ones(3, 2), "layer.bias": torch.zeros(3)}


def test_publish_writes_verified_files(tmp_path: Path) -> None:
    document = publish_checkpoint(tmp_path, "m1", STATE, {"name": "test"})
    folder = tmp_path / "training" / "checkpoints" / "m1"
    assert sorted(p.name for p in folder.iterdir()) == ["model.json", "weights.safetensors"]
    assert json.loads((folder / "model.json").read_text()) == document
    (entry,) = catalogue(tmp_path)
    assert entry.valid and entry.id == "m1" and entry.files == ("weights.safetensors",)
    assert entry.event_fields()["name"] == "test"


@pytest.mark.parametrize("existing", ["empty", "content", "symlink"])
def test_publication_never_replaces_an_existing_target(tmp_path: Path, existing: str) -> None:
    directory = tmp_path / "training" / "checkpoints"
    directory.mkdir(parents=True)
    target = directory / "m1"
    if existing == "empty":
        target.mkdir()
    elif existing == "content":
        target.mkdir()
        (target / "model.json").write_text("original")
    else:
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RovertrainError) as caught:
        publish_checkpoint(tmp_path, "m1", STATE, {})
    assert caught.value.code == "publish_conflict"
    if existing == "content":
        assert (target / "model.json").read_text() == "original"
    assert not list(directory.glob(".*.pending"))


def test_non_finite_weights_are_never_published(tmp_path: Path) -> None:
    with pytest.raises(RovertrainError) as caught:
        publish_checkpoint(tmp_path, "m1", {"w": torch.tensor([1.0, float("nan")])}, {})
    assert caught.value.code == "non_finite_weights"
    assert not (tmp_path / "training" / "checkpoints" / "m1").exists()


def test_catalogue_flags_a_flipped_byte_and_unlisted_files(tmp_path: Path) -> None:
    publish_checkpoint(tmp_path, "m1", STATE, {})
    publish_checkpoint(tmp_path, "m2", STATE, {})
    weights = tmp_path / "training" / "checkpoints" / "m1" / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    (tmp_path / "training" / "checkpoints" / "m2" / "extra.bin").write_bytes(b"x")
    entries = {entry.id: entry for entry in catalogue(tmp_path)}
    assert not entries["m1"].valid and "sha256" in entries["m1"].problems[0]
    assert not entries["m2"].valid and "unlisted" in entries["m2"].problems[0]


def test_stale_staging_is_removed(tmp_path: Path) -> None:
    stale = tmp_path / "training" / "checkpoints" / ".dead.pending"
    stale.mkdir(parents=True)
    (stale / "weights.safetensors").write_bytes(b"half")
    assert remove_stale_staging(tmp_path) == [".dead.pending"]
    assert not stale.exists()


def test_resume_round_trip_and_refusal_of_pickled_code(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "training").mkdir()
    state = {
        "weights": STATE, "optimizer": {}, "schema": [{"type": "stop", "values": [], "role": "stop"}],
        "steps": 5, "examples": 9, "lastPublished": 0, "publishedWindows": 0,
    }  # fmt: skip
    save_resume(tmp_path, state)
    assert load_resume(tmp_path)["steps"] == 5
    canary = tmp_path / "canary"

    class Exploit:
        def __reduce__(self):
            return (Path.touch, (canary,))

    torch.save({"version": 1, "payload": Exploit()}, resume_path(tmp_path))
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RovertrainError) as caught:
        load_resume(tmp_path)
    assert caught.value.code == "resume_incompatible"
    assert not canary.exists()
