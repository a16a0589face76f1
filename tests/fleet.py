"""A fleet's worth of sessions, fast: clones of synthesised sessions under new ids, and their
store entries cloned from their sources' (tests/data/test_store.py, bench/bench_scale.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path


def clone_sessions(root: Path, count: int, prefix: str) -> dict[str, str]:
    """`count` new sessions under root, each a copy of one existing session under a new id
    (its video and command log hard-linked, its session.json rewritten); {clone: source}."""
    recordings = root / "recordings"
    sources = sorted(path for path in recordings.iterdir() if not path.name.startswith(prefix))
    made = {}
    for number in range(count):
        source = sources[number % len(sources)]
        session_id = f"{prefix}-{number:05d}"
        target = recordings / session_id
        target.mkdir()
        meta = json.loads((source / "session.json").read_text())
        for name in (meta["video"]["file"], meta["commands"]["file"]):
            os.link(source / name, target / name)
        meta["sessionId"] = session_id
        (target / "session.json").write_text(json.dumps(meta))
        made[session_id] = source.name
    return made


def clone_store_entries(root: Path, clones: dict[str, str]) -> None:
    """Store entries for cloned sessions, made from their sources' entries (hard links): a
    clone shares its source's video file, so its entry's key is its source's key."""
    cache = root / "training" / "cache"
    metas = {meta.name.rsplit("-", 1)[0]: meta for meta in cache.glob("*.json")}
    for session_id, source in clones.items():
        origin = metas[source]
        name = f"{session_id}-{origin.stem.rsplit('-', 1)[1]}"
        os.link(origin.with_suffix(".frames"), cache / f"{name}.frames")
        shutil.copyfile(origin, cache / f"{name}.json")
