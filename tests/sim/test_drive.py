"""`rovertrain drive`: a checkpoint folder drives closed loop (torch, no export step), with
schema-valid events, its baselines on the same seeds, and the video and trajectory files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_checkpoints import driving_checkpoint

from rovertrain.sim.rollout import run_controller
from rovertrain.sim.worlds import rollout_scenario


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return driving_checkpoint(tmp_path_factory.mktemp("drive") / "root", 77)


def person_commands_before_hand_over() -> int:
    """What the person sends in the first 2 s of road world seed 0, before handing over."""
    scenario = rollout_scenario("road", 0)
    return len(run_controller(scenario.world, scenario.human, 2.0).commands)


def test_drive_reports_the_policy_and_its_baselines(cli, checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("drive", str(checkpoint), "--seconds", "4", "--seeds", "2", "--out", str(out))
    assert result.code == 0, result.stderr
    rollouts = result.of("rollout")
    handed = [(name, "handOver", seed) for name in ("policy", "human", "copycat", "blind") for seed in (0, 1)]  # fmt: skip
    parked = [(name, "rest", seed) for name in ("policy", "copycat", "blind") for seed in (0, 1)]
    assert [(e["controller"], e["start"], e["seed"]) for e in rollouts] == [
        (name, "rest" if name == "human" else start, seed) for name, start, seed in handed + parked
    ]  # the human drives each seed once, from rest
    policy, from_rest = rollouts[0], rollouts[8]
    # Handed over: the person's first 2 s, then one drive per 100 ms tick; from rest, the ticks.
    assert policy["commandCounts"] == {"drive": person_commands_before_hand_over() + 20}
    assert from_rest["commandCounts"] == {"drive": 40} and from_rest["commandsPerSecond"] == 10.0
    assert policy["distanceMetres"] > 0
    summary = result.last()
    assert summary["kind"] == "drove" and summary["world"] == "road"
    assert summary["driver"] == "continuous"
    assert summary["model"]["engine"] == "torch" and summary["seeds"] == [0, 1]
    assert set(summary["margins"]) == {"human", "copycat", "blind"}
    assert set(summary["controllers"]) == {"policy", "human", "copycat", "blind"}
    assert set(summary["starts"]) == {"handOver", "rest"}
    assert summary["starts"]["handOver"]["controllers"] == summary["controllers"]
    rest = summary["starts"]["rest"]["controllers"]
    assert rest["human"] == summary["controllers"]["human"]  # one reference for both starts
    assert rest["copycat"]["distanceMetres"] == 0.0  # from rest there is nothing to copy
    for name in ("rollout", "trajectory"):
        path = Path(summary["files"][name])
        assert path.is_file() and path.stat().st_size > 1000
    # The policy's first rollout (handed over) tick by tick: what it decided, where the rover was.
    ticks = [json.loads(line) for line in Path(summary["files"]["ticks"]).read_text().splitlines()]
    assert [row["t"] for row in ticks] == [100.0 * k for k in range(40)]
    assert all(row["sent"] == [] for row in ticks[:20])  # in the shadow while the person drove
    assert all(row["moving"] for row in ticks[5:]) and ticks[-1]["s"] > ticks[0]["s"]
    assert abs(ticks[-1]["s"] - policy["distanceMetres"]) < 0.5
    for row in ticks[20:]:
        mine = row["sent"][-1:]  # one drive per tick, as counted
        assert [item["type"] for item in mine] == ["drive"]
        assert mine[0]["values"] == row["values"]["drive"]
    import av

    with av.open(summary["files"]["rollout"]) as container:
        assert sum(1 for _ in container.decode(video=0)) == 40  # 4 s at one frame per tick


def test_drive_in_the_warehouse_without_baselines(cli, checkpoint: Path) -> None:
    result = cli("drive", str(checkpoint), "--world", "warehouse", "--seconds", "3",
                 "--seed", "5", "--no-baselines")  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.kinds() == ["rollout", "rollout", "drove"]  # handed over, from rest
    assert result.last()["margins"] == {} and result.last()["files"] == {}
    assert result.of("rollout")[0]["seed"] == 5


def test_drive_from_a_drifted_start_on_request(cli, checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("drive", str(checkpoint), "--seconds", "4", "--seeds", "2", "--start", "drifted",
                 "--start", "rest", "--out", str(out))  # fmt: skip
    assert result.code == 0, result.stderr
    rollouts = result.of("rollout")
    # In report order whatever the order asked; the person drives from each place once.
    assert [(e["controller"], e["start"]) for e in rollouts[::2]] == [
        ("policy", "rest"), ("human", "rest"), ("copycat", "rest"), ("blind", "rest"),
        ("policy", "drifted"), ("human", "drifted"), ("copycat", "drifted"), ("blind", "drifted"),
    ]  # fmt: skip
    drifted = {e["controller"]: e for e in rollouts if e["start"] == "drifted" and e["seed"] == 0}
    assert drifted["human"]["backInLaneSeconds"] > 0  # parked outside, the person turns back
    assert drifted["copycat"]["backInLaneSeconds"] is None  # nothing sent, it stays there
    assert drifted["copycat"]["inLaneFraction"] == 0.0
    assert all(e["backInLaneSeconds"] == 0.0 for e in rollouts if e["start"] == "rest")
    summary = result.last()
    assert set(summary["starts"]) == {"rest", "drifted"}
    assert summary["controllers"] == summary["starts"]["rest"]["controllers"]  # the first
    reference = summary["starts"]["drifted"]["controllers"]["human"]
    assert reference["inLaneFraction"] < summary["controllers"]["human"]["inLaneFraction"]
    # --out films the first start asked for: the policy from rest, on the centre line.
    first = json.loads(Path(summary["files"]["ticks"]).read_text().splitlines()[0])
    assert first["sent"] != [] and abs(first["x"]) < 0.1  # no shadow, not drifted


def test_drive_refuses_bad_arguments(cli, checkpoint: Path, tmp_path: Path) -> None:
    assert cli("drive", str(checkpoint), "--seed", "1", "--seeds", "2").code == 2
    assert cli("drive", str(checkpoint), "--world", "moon").code == 2
    assert cli("drive", str(checkpoint), "--start", "sideways").code == 2
    assert cli("drive", str(checkpoint), "--supervised", "--start", "rest").code == 2
    missing = cli("drive", str(tmp_path / "nothing"), "--seconds", "1")
    assert missing.code != 0 and missing.last()["kind"] == "error"


@pytest.mark.slow
def test_drive_an_exported_folder_on_onnxruntime(cli, checkpoint: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    exported = cli("export", str(checkpoint), "--out", str(tmp_path / "exported"))
    assert exported.code == 0, exported.stderr
    result = cli("drive", str(tmp_path / "exported"), "--seconds", "3", "--no-baselines")
    assert result.code == 0, result.stderr
    assert result.last()["model"]["engine"] == "onnxruntime"
    # As the checkpoint drives on torch: the person's first 2 s, then one drive per 100 ms tick.
    expected = person_commands_before_hand_over() + 10
    assert result.of("rollout")[0]["commandCounts"] == {"drive": expected}


def test_the_registry_names_every_simulated_world() -> None:
    from rovertrain.sim.registry import WORLDS as REGISTERED
    from rovertrain.sim.registry import supervised_names
    from rovertrain.sim.worlds import WORLDS

    assert set(WORLDS) <= set(REGISTERED)
    assert set(supervised_names()) == set(WORLDS)
