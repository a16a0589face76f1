"""The end-to-end import tests' common part: import synthesised drives, run the default job
on them, return its last event; and what the imitation gate decided, short enough for pytest
to print whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import Result
from rovertrain.sim.recorder import default_job

FIGURES = ("gateReasons", "f1", "visionGain", "changeVisionGain", "stopEvents", "stopRecall")


def gate_summary(evaluation: dict[str, Any]) -> dict[str, Any]:
    summary = {key: evaluation.get(key) for key in FIGURES}
    summary["blindF1"] = (evaluation.get("blind") or {}).get("f1")
    summary["valueErrorVsHoldLast"] = evaluation.get("valueErrorVsHoldLast")
    return summary


def import_and_train(
    cli: Callable[..., Result], root: Path, kind: str, sources: list[Path], held_out: int
) -> dict[str, Any]:
    """`rovertrain import KIND SOURCES…` into `root` (every source one whole session), then
    the default job on what it wrote; the job's terminal event."""
    result = cli("import", kind, *map(str, sources), "--out", str(root), timeout=1200)
    assert result.code == 0, result.stderr
    sessions = [event["sessionId"] for event in result.of("imported")]
    assert len(sessions) == len(sources) and not result.of("skipped")
    assert all(event["dropped"] == {} for event in result.of("imported"))
    job = root / "job.json"
    job.write_text(json.dumps(default_job(root, sessions, 7)))
    run = cli("run", "--job", str(job), timeout=1200)
    assert run.code == 0, run.stderr
    assert not run.of("skipped")
    assert len([e for e in run.of("dataset") if e.get("partition") == "heldOut"]) == held_out
    return run.last()
