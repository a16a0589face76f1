from __future__ import annotations

from pathlib import Path

import pytest

from rovertrain.store import durable
from rovertrain.store.durable import atomic_replace, replacing


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


def test_replacing_swaps_the_whole_file_at_once(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    with replacing(target) as temporary:
        assert temporary.parent == tmp_path and temporary.name.endswith(".tmp")
        temporary.write_text("new")
        assert target.read_text() == "old"  # nothing visible before the block ends
    assert target.read_text() == "new"
    assert leftovers(tmp_path) == []


def test_a_reader_of_the_old_file_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "log.csv"
    target.write_text("old")
    with open(target) as reader:
        with replacing(target) as temporary:
            temporary.write_text("new")
        assert reader.read() == "old"  # a rename, not a rewrite in place
    assert target.read_text() == "new"


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("writer died")
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_a_failing_rename_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "inside").write_text("x")  # a file cannot replace a non-empty folder
    with pytest.raises(OSError), replacing(target) as temporary:
        temporary.write_text("new")
    assert leftovers(tmp_path) == [] and (target / "inside").exists()


def test_durable_fsyncs_the_folder_after_the_rename(tmp_path: Path, monkeypatch) -> None:
    synced: list[tuple[Path, bool]] = []
    target = tmp_path / "resume.pt"
    monkeypatch.setattr(
        durable, "fsync_directory", lambda path: synced.append((path, target.exists()))
    )
    with replacing(target) as temporary:
        temporary.write_bytes(b"a")
    assert synced == []
    with replacing(target, durable=True) as temporary:
        temporary.write_bytes(b"b")
    assert synced == [(tmp_path, True)]


def test_atomic_replace_writes_durably_and_cleans_up_on_failure(
    tmp_path: Path, monkeypatch
) -> None:
    target = tmp_path / "resume.pt"
    atomic_replace(target, b"one")
    atomic_replace(target, b"two")
    assert target.read_bytes() == b"two" and leftovers(tmp_path) == []

    def broken(path: Path) -> None:
        raise OSError(5, "injected")

    monkeypatch.setattr(durable, "fsync_directory", broken)
    with pytest.raises(OSError):
        atomic_replace(target, b"three")
    assert leftovers(tmp_path) == []
