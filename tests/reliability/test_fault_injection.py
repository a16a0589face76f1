"""Fault injection is test-only: it lives in tests/faults/, product code never reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import FAULTS, REPO, cli_env, parse_events, write_job

# A publication is what is checked: batches of 16 and no learning probe (its 20 s default).
FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip

WRAPPED = """
import json, sys
import rovertrain.job.control as control, rovertrain.store.durable as durable
import rovertrain.store.publish as publish
{late}
def wrapped(function):
    return bool(getattr(function, "__rovertrain_fault__", False))
print(json.dumps({{
    "durable": wrapped(durable.rename_no_replace),
    "publish": wrapped(publish.rename_no_replace),
    "enter": wrapped(control.JobControl.enter),
    "untouched": wrapped(publish.write_durably) or wrapped(control.JobControl.safe_point),
}}))
"""
LATE = f"sys.path.insert(0, {str(FAULTS)!r}); import sitecustomize"


def without_faults_folder(env: dict[str, str]) -> dict[str, str]:
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(FAULTS)]
    return {**env, "PYTHONPATH": os.pathsep.join(kept)}


def wrapped_functions(env: dict[str, str], late: str = "") -> dict[str, bool]:
    completed = subprocess.run(
        [sys.executable, "-c", WRAPPED.format(late=late)],
        capture_output=True, env=env, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr.decode()
    return json.loads(completed.stdout)


def test_faults_wrap_product_functions_imported_late_or_early() -> None:
    faults = {"failRename": True, "slowPhaseSeconds": 1}
    wrapped = {"durable": True, "publish": True, "enter": True, "untouched": False}
    # Set at start-up, before rovertrain is imported (what the tests' CLI processes do)...
    assert wrapped_functions(cli_env(faults)) == wrapped
    # ...or after: the modules and the `from ... import` copies are patched in place.
    late = {**without_faults_folder(cli_env(faults)), "ROVERTRAIN_FAULTS": json.dumps(faults)}
    assert wrapped_functions(late, LATE) == wrapped


def test_the_fault_variable_alone_changes_nothing() -> None:
    env = {**without_faults_folder(cli_env()), "ROVERTRAIN_FAULTS": '{"failRename": true}'}
    assert not any(wrapped_functions(env).values())


def test_the_fault_variable_alone_publishes_normally(synth_copy: Path) -> None:
    """The job that test_faults.py sees fail on rename, without tests/faults on the path."""
    env = {**without_faults_folder(cli_env()), "ROVERTRAIN_FAULTS": '{"failRename": true}'}
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(write_job(synth_copy, **FAST))],
        capture_output=True, env=env, timeout=300, cwd=REPO,
    )  # fmt: skip
    events = parse_events(completed.stdout)
    assert completed.returncode == 0, completed.stderr.decode()
    assert events[-1]["kind"] == "complete" and events[-1]["trained"]
    assert list((synth_copy / "training" / "checkpoints").iterdir())


def test_an_unknown_fault_fails_loudly() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "pass"], capture_output=True, env=cli_env({"failRenames": True}),
        timeout=60,
    )  # fmt: skip
    assert completed.returncode == 97
    assert "unknown faults ['failRenames']" in completed.stderr.decode()


def test_product_code_never_mentions_fault_injection() -> None:
    words = ("ROVERTRAIN_FAULTS", "TEST_HOOKS", "test_hooks", "sitecustomize", "tests/faults")
    for path in sorted((REPO / "src" / "rovertrain").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            data = path.read_bytes()
            assert not [w for w in words if w.encode() in data], f"{path} refers to fault injection"
