"""Learning must be real: the default synth job passes the gate, scrambled labels do not.

Slow (a few minutes each on 2 cores): run with `make test-slow`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Minutes each: the suite-wide 300 s timeout is for the fast tests.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def synthesise(cli, root: Path, *extra: str) -> Path:
    result = cli("synth", "--out", str(root), "--sessions", "12", "--minutes", "2",
                 "--seed", "7", *extra, timeout=900)  # fmt: skip
    assert result.code == 0, result.stderr
    return root / "job.json"


def test_default_synth_job_passes_the_imitation_gate(cli, tmp_path: Path) -> None:
    job = synthesise(cli, tmp_path / "root")
    result = cli("run", "--job", str(job), timeout=900)
    assert result.code == 0, result.stderr
    complete = result.last()
    evaluation = complete["evaluation"]
    assert evaluation["status"] == "passed imitation gate", evaluation.get("gateReasons")
    assert complete["promote"] is True
    current = cli("models", str(tmp_path / "root"), "--current")
    assert current.last()["valid"] is True
    assert current.last()["current"]["id"] == complete["published"]["id"]
    # The synthetic world is realistic: 10-40% of windows carry a command, 1-5% a stop.
    totals = {"none": 0, "command": 0, "stop": 0}
    for event in result.of("dataset"):
        for name, count in event["diagnostics"]["categories"].items():
            totals[name] += count
    windows = sum(totals.values())
    assert 0.10 <= (totals["command"] + totals["stop"]) / windows <= 0.40
    assert 0.01 <= totals["stop"] / windows <= 0.05
    assert complete["elapsedSeconds"] <= 600 + 20


def test_scrambled_commands_do_not_pass_the_gate(cli, tmp_path: Path) -> None:
    job = synthesise(cli, tmp_path / "root", "--shuffle-commands")
    result = cli("run", "--job", str(job), timeout=900)
    assert result.code == 0, result.stderr
    evaluation = result.last()["evaluation"]
    assert evaluation["status"] == "imitation gate not met"
    assert result.last()["promote"] is False
