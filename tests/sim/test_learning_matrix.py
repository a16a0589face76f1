"""The learning claims, across worlds and seeds (slow: `make test-slow`).

For each world and seed 0-4: synthesise 12 two-minute sessions, run the job with the
product's defaults, and require the imitation gate to pass and the published model to drive:
in lane >= 90% of the time and stopped before contact for >= 80% of the obstacles over five
two-minute rollouts, far above the copycat that repeats its last command. Results per cell
are in docs/learning.md; a cell that fails is a finding to report, not to tune away.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

WORLDS = ("road", "warehouse")
SEEDS = range(5)
ROLLOUT_SEEDS = (0, 1, 2, 3, 4)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("world", WORLDS)
def test_the_default_job_learns_to_drive(world: str, seed: int, tmp_path: Path) -> None:
    from rovertrain.deploy.replay import load_policy
    from rovertrain.sim.rollout import closed_loop_report

    root = tmp_path / "root"
    made = run_cli("synth", "--out", str(root), "--world", world, "--sessions", "12",
                   "--minutes", "2", "--seed", str(seed))  # fmt: skip
    assert made.code == 0, made.stderr
    job = run_cli("run", "--job", str(root / "job.json"), timeout=1800)
    assert job.code == 0, job.stderr
    complete = job.last()
    evaluation = complete["evaluation"]
    assert evaluation["status"] == "passed imitation gate", evaluation["gateReasons"]
    (published,) = job.of("published")
    checkpoint = Path(published["path"])
    policy, _, _ = load_policy(str(checkpoint))
    report = closed_loop_report(lambda: policy, world, ROLLOUT_SEEDS, 120.0)
    driven, copycat = report.summaries["policy"], report.summaries["copycat"]
    figures = json.dumps(report.summary_fields()["controllers"])
    assert driven.in_lane_fraction >= 0.9, figures
    assert driven.stop_rate is not None and driven.stop_rate >= 0.8, figures
    assert driven.in_lane_fraction - copycat.in_lane_fraction >= 0.3, figures
