from __future__ import annotations

import os
import time
from pathlib import Path

from rovertrain.data.window_store.entries import evict, store_dir


def make_entry(root: Path, name: str, size: int, used: float) -> None:
    directory = store_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.frames").write_bytes(b"x" * size)
    meta = directory / f"{name}.json"
    meta.write_text("{}")
    os.utime(meta, (used, used))


def test_eviction_removes_least_recently_used_first(tmp_path: Path) -> None:
    now = time.time()
    make_entry(tmp_path, "old", 1000, now - 300)
    make_entry(tmp_path, "middle", 1000, now - 200)
    make_entry(tmp_path, "new", 1000, now - 100)
    removed, left = evict(tmp_path, 2100, keep={})
    names = sorted(p.stem for p in store_dir(tmp_path).glob("*.json"))
    assert names == ["middle", "new"] and (removed, left) == (1002, 2004)


def test_entries_in_use_are_kept(tmp_path: Path) -> None:
    now = time.time()
    make_entry(tmp_path, "old", 1000, now - 300)
    make_entry(tmp_path, "new", 1000, now - 100)
    removed, left = evict(tmp_path, 0, keep={"old": 1002})
    assert sorted(p.stem for p in store_dir(tmp_path).glob("*.json")) == ["old"]
    assert (removed, left) == (1002, 1002)  # what is kept is counted by its known size
