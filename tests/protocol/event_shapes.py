"""The shapes of what the product writes, for a before/after comparison of a refactor.

`python tests/protocol/event_shapes.py OUT.json` runs one small scenario through the CLI of
whichever rovertrain is importable (synth, validate-job, run, models, export, replay, inspect,
drive, schema) and writes, per event kind, the set of `path: type` leaves its events had, and
the same for the files a person or a rover reads (job.json, model.json, runtime.json,
manifest.json). tests/protocol/test_event_shapes.py compares today's against
golden_event_shapes.json, recorded on the code before the layering redesign: a key may be
added, none may vanish or change type.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

Shapes = dict[str, list[str]]


def leaves(value: Any, path: str = "") -> set[str]:
    """`path: type` for every leaf; list items share one path (`[]`); object keys that are
    data (session ids, command types, file names) are not told apart from field names, so
    the scenario keeps them fixed."""
    if isinstance(value, dict):
        if not value:
            return {f"{path}: object"}
        return set().union(*(leaves(item, f"{path}.{key}") for key, item in value.items()))
    if isinstance(value, list):
        if not value:
            return {f"{path}[]: empty"}
        return set().union(*(leaves(item, f"{path}[]") for item in value))
    kind = {bool: "bool", int: "number", float: "number", str: "string"}.get(type(value), "null")
    return {f"{path}: {kind}"}


def cli(*args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", *args], capture_output=True, timeout=900, env=env
    )
    events = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
    if not events:
        raise SystemExit(f"rovertrain {args[0]}: no events\n{completed.stderr.decode()[-2000:]}")
    return events


def record(shapes: dict[str, set[str]], name: str, value: Any) -> None:
    shapes.setdefault(name, set()).update(leaves(value))


def scenario(work: Path) -> Shapes:
    shapes: dict[str, set[str]] = {}
    root = work / "root"
    synth = ("--sessions", "4", "--minutes", "0.4", "--seed", "3")
    events = cli("synth", "--out", str(root), *synth)
    job = json.loads((root / "job.json").read_text())
    job["config"] = {**job.get("config", {}), "maxStepsPerJob": 20, "minimumSamples": 16}
    job["config"].update(minimumDrivingMinutes=0.1, probeMaxSeconds=0, maxJobSeconds=300)
    job["gate"] = {"minHeldOutSessions": 0, "minHeldOutWindows": 0, "minCommandEvents": 0}
    job_path = work / "job.json"
    job_path.write_text(json.dumps(job))
    record(shapes, "file:job.json", job)
    events += cli("validate-job", str(job_path), "--offline")
    run = cli("run", "--job", str(job_path))
    events += run
    events += cli("models", str(root))
    (checkpoint_dir,) = [Path(e["path"]) for e in run if e["kind"] == "published"][-1:]
    record(shapes, "file:model.json", json.loads((checkpoint_dir / "model.json").read_text()))
    out = work / "policy"
    events += cli("export", str(checkpoint_dir), "--out", str(out))
    for name in ("runtime.json", "manifest.json"):
        record(shapes, f"file:{name}", json.loads((out / name).read_text()))
    session = sorted(path.name for path in (root / "recordings").iterdir())[0]
    events += cli("replay", str(out), str(root), session)
    events += cli("inspect", str(root))
    # Long enough that the blind baseline leaves its lane (a number in firstDepartureSeconds):
    # at 8.9 s since the rover fires at the person's chance (docs/learning.md).
    events += cli("drive", str(out), "--world", "road", "--seed", "1", "--seconds", "12")
    events += cli("check-deps")
    for event in events:
        record(shapes, f"event:{event['kind']}", event)
    return {name: sorted(found) for name, found in sorted(shapes.items())}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        result = scenario(Path(work))
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")
