"""Invariants checked after every reliability case."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from conftest import check_model_manifest, parse_events
from rovertrain.job.resume import load_resume, resume_path
from rovertrain.store.catalogue import verify_checkpoint


def check_stream(stdout: bytes, run: bool = True) -> list[dict[str, Any]]:
    """Strict JSON, schema-valid, contiguous seq, at most one terminal event and it is last."""
    events = parse_events(stdout)
    if run and events and events[0]["kind"] != "error":
        assert events[0]["kind"] == "started", events[0]
    return events


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file of every published checkpoint."""
    result = {}
    directory = root / "training" / "checkpoints"
    if directory.is_dir():
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.relative_to(directory).parts[0].startswith("."):
                result[str(path.relative_to(directory))] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
    return result


def check_files(root: Path, before: dict[str, str]) -> None:
    directory = root / "training" / "checkpoints"
    if directory.is_dir():
        for path in directory.iterdir():
            if path.name.startswith("."):
                continue
            _meta, problems = verify_checkpoint(path)
            assert not problems, (path.name, problems)
            check_model_manifest(json.loads((path / "model.json").read_text()))
    after = snapshot(root)
    for name, digest in before.items():
        assert after.get(name) == digest, f"published file {name} changed or vanished"
    if resume_path(root).exists():
        load_resume(root)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def orphan_decoders() -> list[int]:
    """Decoder children left behind by a dead job (re-parented to init)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            with open(f"/proc/{entry}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"multiprocessing.spawn" in cmdline and int(fields[1]) == 1:
            found.append(int(entry))
    return found


def check_no_orphans(pid: int) -> None:
    import time

    deadline = time.monotonic() + 30  # a safety net: they are normally gone already
    while time.monotonic() < deadline and (children_of(pid) or orphan_decoders()):
        time.sleep(0.05)
    assert not children_of(pid) and not orphan_decoders()
