"""Issue 27's goal, per data seed (`make test-slow`): on the corridor world from a small set
of a careful person's drives (6 sessions of 1 minute), the default job alone misses the
closed-loop goal; supervised rounds (`drive --supervised --record`, then the default job on
everything) reach it within 3 rounds (in lane >= 90%, stopped before >= 80% of the obstacles,
over world seeds 0-4), and the last model needs fewer take-overs than the first. Minutes per
case (docs/learning.md, "Learning from take-overs")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROUNDS = 3
FIELD_SEEDS_PER_ROUND = 4


def goal_met(cli: Any, checkpoint: Path) -> tuple[bool, str]:
    """The matrix's goal (tests/sim/test_closed_loop_goal.py) on world seeds 0-4."""
    drove = cli("drive", str(checkpoint), "--world", "corridor", "--seeds", "5", "--seconds", "120")
    assert drove.code == 0, drove.stderr
    summary = drove.last()
    policy = summary["controllers"]["policy"]
    stop_rate = policy["obstacles"]["stopRate"]
    met = (
        policy["inLaneFraction"] >= 0.9
        and stop_rate is not None
        and stop_rate >= 0.8
        and summary["margins"]["human"]["distanceRatio"] >= 0.7
    )
    words = (
        f"in lane {policy['inLaneFraction']}, stopped {policy['obstacles']['stoppedBeforeContact']}"
        f"/{policy['obstacles']['met']}, distance ratio {summary['margins']['human']['distanceRatio']}"
    )
    return met, words


def supervised_round(cli: Any, root: Path, checkpoint: Path, round_number: int) -> dict[str, Any]:
    """The model drives fresh field seeds under supervision, recorded into the data root."""
    seeds = [f"--seed={round_number * 100 + i}" for i in range(FIELD_SEEDS_PER_ROUND)]
    drove = cli("drive", str(checkpoint), "--world", "corridor", "--supervised",
                "--record", str(root), *seeds, "--seconds", "60")  # fmt: skip
    assert drove.code == 0, drove.stderr
    field: dict[str, Any] = drove.last()["controllers"]["supervised"]["field"]
    return field


def per_10_minutes(field: dict[str, Any]) -> float:
    """Take-overs per 10 minutes of autonomy; a policy that never drove counts as the worst."""
    rate = field["takeOversPer10Minutes"]
    return float("inf") if rate is None else float(rate)


def train(cli: Any, job: Path) -> Path:
    trained = cli("run", "--job", str(job), "--no-progress", timeout=3000)
    assert trained.code == 0, trained.stderr
    complete = trained.last()
    assert complete["kind"] == "complete" and complete.get("published"), complete
    return job.parent / "training" / "checkpoints" / complete["published"]["id"]


SEEDS = range(5)  # all five reached the goal with takeOverRepeats 3 (2026-12-02, one run)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", SEEDS)
def test_supervised_rounds_reach_the_goal_imitation_alone_misses(
    cli: Any, tmp_path: Path, seed: int
) -> None:
    root = tmp_path / "root"
    made = cli("synth", "--out", str(root), "--world", "corridor", "--sessions", "6",
               "--minutes", "1", "--seed", str(seed))  # fmt: skip
    assert made.code == 0, made.stderr
    checkpoint = train(cli, root / "job.json")
    alone, alone_words = goal_met(cli, checkpoint)
    everything = json.loads((root / "job.json").read_text())
    everything.pop("sessions")  # the scheduler's next job: every recording under the root
    (root / "job-all.json").write_text(json.dumps(everything))
    history = [f"data seed {seed}: imitation alone: {alone_words}"]
    rates: list[float] = []
    met = False
    for round_number in range(1, ROUNDS + 1):
        field = supervised_round(cli, root, checkpoint, round_number)
        rates.append(per_10_minutes(field))
        checkpoint = train(cli, root / "job-all.json")
        met, words = goal_met(cli, checkpoint)
        history.append(f"round {round_number}: {field['takeOvers']} take-overs "
                       f"({rates[-1]} per 10 min), then {words}")  # fmt: skip
        if met:
            break
    last = per_10_minutes(supervised_round(cli, root, checkpoint, ROUNDS + 1))
    history.append(f"the last model supervised: {last} take-overs per 10 min")
    print("; ".join(history))
    assert not alone, history
    assert met, history
    assert last < rates[0], history
