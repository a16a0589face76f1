"""Shared fixtures: every event any test sees is validated against schemas/events.schema.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT

REPO = Path(__file__).resolve().parent.parent
EVENT_SCHEMA = json.loads((REPO / "schemas" / "events.schema.json").read_text())
EVENT_VALIDATOR = Draft202012Validator(EVENT_SCHEMA)
MODEL_VALIDATOR = Draft202012Validator(
    json.loads((REPO / "schemas" / "model.schema.json").read_text())
)


def check_model_manifest(document: dict[str, Any]) -> None:
    """A published model.json must satisfy schemas/model.schema.json."""
    errors = sorted(MODEL_VALIDATOR.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, (
        f"model.json violates the schema at {list(errors[0].path)}: {errors[0].message}"
    )


TERMINAL = {"complete", "error"}
FAULTS = REPO / "tests" / "faults"  # sitecustomize.py: fault injection, never in product code


def _no_constants(name: str) -> Any:
    raise AssertionError(f"stdout carried the non-JSON constant {name}")


def no_windows() -> SimpleNamespace:
    """A window set's labels with no window (a fake dataset's `training` in publication tests)."""
    return SimpleNamespace(
        states=np.zeros((0, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32),
        fires=np.zeros((0, SLOTS), dtype=np.uint8),
        values=np.zeros((0, SLOTS, VALUES), dtype=np.float32),
        available=np.zeros((0, SLOTS, VALUES), dtype=np.uint8),
    )


def parse_events(stdout: bytes | str) -> list[dict[str, Any]]:
    """Parse NDJSON strictly and validate every event; fail loudly on any violation."""
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            event = json.loads(line, parse_constant=_no_constants)
        except json.JSONDecodeError as error:
            raise AssertionError(f"stdout line {number} is not JSON: {line[:200]!r}") from error
        errors = sorted(EVENT_VALIDATOR.iter_errors(event), key=lambda e: list(e.path))
        assert not errors, f"event {line[:300]} violates the schema: {errors[0].message}"
        # The per-session error boundary must never hide a bug.
        assert not (event["kind"] == "skipped" and event.get("code") == "session_internal"), (
            f"a session hit the error boundary (a bug in rovertrain): {line[:1000]}"
        )
        events.append(event)
    if text:
        assert text.endswith("\n"), "the last event is not newline-terminated"
    seqs = [event["seq"] for event in events]
    assert seqs == list(range(len(events))), f"seq not contiguous: {seqs}"
    terminal = [i for i, event in enumerate(events) if event["kind"] in TERMINAL]
    assert len(terminal) <= 1, "more than one terminal event"
    if terminal:
        assert terminal[0] == len(events) - 1, "the terminal event is not last"
    return events


@dataclass
class Result:
    code: int
    events: list[dict[str, Any]]
    stderr: str

    def kinds(self) -> list[str]:
        return [event["kind"] for event in self.events]

    def last(self) -> dict[str, Any]:
        return self.events[-1]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["kind"] == kind]


def cli_env(hooks: dict[str, Any] | None = None) -> dict[str, str]:
    """The CLI's environment; `hooks` are faults (see tests/faults/sitecustomize.py) to inject."""
    env = dict(os.environ)
    env["ROVERTRAIN_STRICT_EVENTS"] = "1"
    env.pop("ROVERTRAIN_FAULTS", None)
    if hooks:
        env["ROVERTRAIN_FAULTS"] = json.dumps(hooks)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULTS), env.get("PYTHONPATH")]))
    return env


def run_cli(
    *args: str,
    stdin: bytes | None = None,
    hooks: dict[str, Any] | None = None,
    timeout: float = 600,
) -> Result:
    completed = subprocess.run(
        [sys.executable, "-m", "rovertrain", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=cli_env(hooks),
        cwd=REPO,
    )
    return Result(completed.returncode, parse_events(completed.stdout), completed.stderr.decode())


@pytest.fixture
def cli() -> Callable[..., Result]:
    return run_cli


@pytest.fixture(scope="session")
def synth_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic data set, written once per test session (do not modify it)."""
    root = tmp_path_factory.mktemp("synth") / "root"
    result = run_cli("synth", "--out", str(root), "--sessions", "5", "--minutes", "0.4",
                     "--seed", "3")  # fmt: skip
    assert result.code == 0, result.stderr
    # The suite runs two workers on two cores: each job gets one thread. Two threads per job
    # oversubscribe the cores (OpenMP spin-waits): tests/job/test_run.py took 94 s with the
    # default 2, 66 s with 1. Tests about threads set them (tests/reliability/test_faults.py).
    job = json.loads((root / "job.json").read_text())
    job["config"]["threads"] = 1
    (root / "job.json").write_text(json.dumps(job))
    return root


def copy_root(synth_data: Path, folder: Path) -> Path:
    """`folder`/root: a copy of the data set's recordings, its job file pointing at the copy."""
    import shutil

    root = folder / "root"
    shutil.copytree(synth_data / "recordings", root / "recordings")
    job = json.loads((synth_data / "job.json").read_text())
    job["root"] = str(root)
    (root / "job.json").write_text(json.dumps(job))
    return root


@pytest.fixture
def synth_copy(synth_data: Path, tmp_path: Path) -> Path:
    """A private copy of the small data set, with its job file pointing at the copy."""
    return copy_root(synth_data, tmp_path)


def start_run(job: Path, hooks: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    """A `rovertrain run` in the background, its stdout a pipe the test reads."""
    return subprocess.Popen(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(job)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=cli_env(hooks),
    )  # fmt: skip


def read_until(process: subprocess.Popen[bytes], kind: str) -> list[bytes]:
    """Raw lines up to and including the first event of `kind`."""
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if json.loads(line)["kind"] == kind:
            return lines
    raise AssertionError(f"no {kind} event")


def read_paused_heartbeats(process: subprocess.Popen[bytes], beats: int) -> list[bytes]:
    """Raw lines up to the `beats`-th heartbeat while paused; a paused job writes nothing else."""
    lines: list[bytes] = []
    assert process.stdout is not None
    for line in process.stdout:  # the suite's timeout is the safety net
        lines.append(line)
        event = json.loads(line)
        assert event["kind"] == "heartbeat" and event["paused"], event
        if len(lines) == beats:
            return lines
    raise AssertionError("the job ended while paused")


def signal_pending(pid: int, number: int) -> bool:
    """Whether signal `number` was sent to process `pid` and not delivered yet (/proc)."""
    with open(f"/proc/{pid}/status") as stream:
        masks = [
            int(line.split()[1], 16) for line in stream if line.startswith(("SigPnd", "ShdPnd"))
        ]
    return any(mask >> (number - 1) & 1 for mask in masks)


def signal_after_progress(
    job: Path, number: int, timeout: float
) -> tuple[int, list[dict[str, Any]]]:
    """Start a run, send `number` once training reports progress, return (exit code, events)."""
    process = start_run(job)
    lines = read_until(process, "progress")
    process.send_signal(number)
    rest, _ = process.communicate(timeout=timeout)
    return process.returncode, parse_events(b"".join(lines) + rest)


def write_job(root: Path, **config: Any) -> Path:
    job = json.loads((root / "job.json").read_text())
    job["config"].update(config)
    path = root / "job-test.json"
    path.write_text(json.dumps(job))
    return path
