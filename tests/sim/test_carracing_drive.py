"""`drive --world carracing`: the closed loop's pure parts (what the car executes, fresh
tracks, the race figures and margins), and the command itself on a real CarRacing-v3."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sim_checkpoints import driving_checkpoint

from rovertrain.deploy.rollout_media import BAR
from rovertrain.sim.carracing import track_seed
from rovertrain.sim.carracing_drive import (
    RaceTrace,
    executed_after,
    fresh_track,
    race_metrics,
)
from rovertrain.sim.choices import HAND_OVER_MS
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.race import RaceFigures, race_margin, race_summary
from rovertrain.sim.teleop import STANDSTILL, Wish


def test_the_car_executes_the_last_drive_command_and_nothing_else_changes_it() -> None:
    first = SentCommand(0.0, "drive", {"turn": 0.2, "throttle": 0.5})
    second = SentCommand(0.0, "drive", {"turn": -0.1, "throttle": -0.3})
    assert executed_after(STANDSTILL, [first, second]) == Wish(-0.1, -0.3)
    assert executed_after(Wish(0.2, 0.5), [SentCommand(0.0, "horn", None)]) == Wish(0.2, 0.5)
    assert executed_after(Wish(0.2, 0.5), []) == Wish(0.2, 0.5)
    # A drive command without a value: that control at 0 (as the teleop page's car does).
    assert executed_after(STANDSTILL, [SentCommand(0.0, "drive", {"turn": 0.4})]) == Wish(0.4, 0)


def test_drive_never_uses_a_recorded_track() -> None:
    recorded = {track_seed(seed, index) for seed in range(5) for index in range(200)}
    driven = [fresh_track(seed) for seed in range(100)]
    assert len(set(driven)) == 100 and not recorded & set(driven)


def test_race_metrics_read_the_steps_driven() -> None:
    trace = RaceTrace("policy", 30.0, track_tiles=200, reward=412.5, tiles_visited=120)
    trace.offsets = [0.2] * 50 + [1.5] * 50  # half the steps off the road
    trace.speeds = [0.0] * 25 + [40.0] * 75
    trace.commands = [SentCommand(0.0, "drive", {"turn": 0.0, "throttle": 1.0})] * 4
    metrics = race_metrics(trace, seed=3)
    assert metrics.in_lane_fraction == 0.5 and metrics.first_departure_s == pytest.approx(1.02)
    assert metrics.moving_fraction == 0.75
    assert metrics.distance_m == pytest.approx(75 * 40 * 0.02)
    assert metrics.commands_per_second == pytest.approx(4 / 2.0)  # 100 steps of 20 ms
    assert metrics.own == RaceFigures(412.5, 120, 200, "time")
    assert metrics.event_fields()["race"] == {
        "reward": 412.5, "tilesVisited": 120, "trackTiles": 200, "tileFraction": 0.6,
        "ended": "time",
    }  # fmt: skip


def test_race_summaries_and_margins() -> None:
    policy = race_summary(
        [RaceFigures(600.0, 180, 200, "time"), RaceFigures(800.0, 190, 200, "lap")]
    )
    driver = race_summary(
        [RaceFigures(880.0, 200, 200, "lap"), RaceFigures(870.0, 200, 200, "lap")]
    )
    copycat = race_summary(
        [RaceFigures(-40.0, 20, 200, "time"), RaceFigures(-140, 5, 200, "off_playfield")]
    )
    assert (policy.reward, policy.tile_fraction, policy.laps) == (700.0, 0.925, 1)
    assert copycat.off_playfield == 1
    assert race_margin(policy, driver).reward_ratio == pytest.approx(700 / 875)
    versus_copycat = race_margin(policy, copycat)
    assert versus_copycat.reward_ratio is None  # a ratio to a negative reward means nothing
    assert versus_copycat.reward_difference == 790.0


@pytest.fixture(scope="module")
def carracing_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hand-set policy on CarRacing's schema: fires `drive` every tick, half gas, straight."""

    def half_gas(model: Any) -> None:
        model.values.weight.zero_()
        model.values.bias.zero_()
        model.values.bias[4 + 2] = 0.55  # drive throttle (slot 1, value 2) about 0.5

    schema = [
        {"type": "stop", "values": [], "role": "stop"},
        {"type": "drive", "values": ["speed", "turn", "throttle"], "role": "movement"},
    ]
    root = tmp_path_factory.mktemp("carracing") / "root"
    return driving_checkpoint(root, 78, half_gas, schema)


def test_drive_carracing_reports_the_race_for_the_policy_and_its_baselines(
    cli, carracing_checkpoint: Path, tmp_path: Path
) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("Box2D")
    out = tmp_path / "out"
    result = cli("drive", str(carracing_checkpoint), "--world", "carracing", "--seconds", "4",
                 "--out", str(out))  # fmt: skip
    assert result.code == 0, result.stderr
    events = result.of("rollout")
    assert [(e["controller"], e["start"]) for e in events] == [
        ("policy", "handOver"), ("human", "rest"), ("copycat", "handOver"), ("blind", "handOver"),
        ("policy", "rest"), ("copycat", "rest"), ("blind", "rest"),
    ]  # fmt: skip
    rollouts = {event["controller"]: event for event in events[:4]}
    for event in events:
        assert event["world"] == "carracing" and event["seed"] == 0
        assert event["race"]["trackTiles"] > 100 and event["race"]["ended"] == "time"
    # The scripted driver hands a moving car over after 2 s; the policy then sends a drive
    # every 100 ms tick (it fires every tick), straight at half gas.
    policy = rollouts["policy"]
    hand_over = rollouts["copycat"]["commandCounts"]["drive"] - 5  # 2 s of keepalives
    assert policy["commandCounts"]["drive"] == hand_over + int((4000 - HAND_OVER_MS) / 100)
    # From rest the policy drives the parked car from the first step: a drive every tick.
    assert events[4]["commandCounts"]["drive"] == 40
    assert events[5]["commandCounts"] == {}  # the copycat has nothing to copy
    assert rollouts["human"]["race"]["tilesVisited"] > 10
    assert policy["distanceMetres"] > 0 and policy["movingFraction"] > 0.5
    summary = result.last()
    assert summary["kind"] == "drove" and summary["world"] == "carracing"
    assert summary["seconds"] == 4.0 and summary["seeds"] == [0]
    assert summary["controllers"]["human"]["race"]["reward"] > 0
    assert set(summary["margins"]) == {"human", "copycat", "blind"}
    assert summary["margins"]["human"]["race"]["rewardRatio"] is not None
    # --out: the policy's rollout, one observation per 100 ms, 4 times its size, above the
    # status bar every world's video has (`deploy.rollout_media.BAR` rows).
    assert summary["files"] == {"rollout": str(out / "rollout.mp4")}
    import av

    with av.open(summary["files"]["rollout"]) as container:
        pictures = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    assert len(pictures) == 40 and pictures[0].shape == (384 + BAR, 384, 3)


def test_drive_carracing_refuses_what_cannot_drive_the_car(
    cli, carracing_checkpoint: Path, tmp_path: Path
) -> None:
    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.learn.policy import Policy, specification
    from rovertrain.store.publish import publish_checkpoint

    short = cli("drive", str(carracing_checkpoint), "--world", "carracing", "--seconds", "2")
    assert short.code == 2 and short.kinds() == ["error"] and "2 s" in short.last()["message"]
    road_id = str(uuid.UUID(int=79))  # drive {speed, turn}: no throttle for the car
    metadata = {"name": "road", "createdAt": 1, "specification": specification(initial_schema()),
                "actionThreshold": 0.5, "promote": True}  # fmt: skip
    publish_checkpoint(tmp_path, road_id, dict(Policy().state_dict()), metadata)
    road = cli("drive", str(tmp_path / "training" / "checkpoints" / road_id), "--world",
               "carracing")  # fmt: skip
    assert road.code == 2 and "drive {turn, throttle}" in road.last()["message"]


class Straight:
    """Gas, the wheel straight: where the car's nose points, it goes."""

    name = "policy"

    def act(self, t_ms: float, camera: Any, pose: Any) -> list[SentCommand]:
        return [SentCommand(t_ms, "drive", {"turn": 0.0, "throttle": 0.5})] if t_ms == 0 else []


@pytest.mark.parametrize("seed", [0, 1])  # both sides of the track
def test_a_drifted_start_parks_the_car_on_the_grass_nose_out(seed: int) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("Box2D")
    from rovertrain.sim.carracing import make_env
    from rovertrain.sim.carracing_drive import ScriptedDriver, race
    from rovertrain.sim.choices import DRIFT_OFFSET, DRIFTED, drift_of

    drift = drift_of(DRIFTED, seed)
    env = make_env(6 * 50 + 1)
    try:
        track = fresh_track(seed)
        person = race(env, track, ScriptedDriver, 6.0, drift=drift)
        straight = race(env, track, lambda follower: Straight(), 1.5, drift=drift)
    finally:
        env.close()
    assert person.offsets[0] == pytest.approx(DRIFT_OFFSET, abs=0.05)  # off the road, parked
    assert person.speeds[0] < 0.5
    metrics = race_metrics(person, seed, DRIFTED)
    assert metrics.back_in_lane_s is not None and metrics.back_in_lane_s < 4, metrics
    # Straight ahead, the car leaves the road further: its nose points out.
    assert straight.offsets[-1] > straight.offsets[0] + 0.3
