"""`synth --world carracing`: the scripted teleop driver's rule (pure, no gymnasium), the
recordings it writes through the CLI, and that it actually drives the track."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import pytest

from rovertrain.contracts.errors import RovertrainError
from rovertrain.sim.teleop import (
    KEEPALIVE_MS,
    CarPose,
    Lapses,
    LapseStyle,
    TeleopLink,
    TrackFollower,
    Wish,
    car_action,
)


def test_the_first_wish_is_sent_at_once() -> None:
    link = TeleopLink()
    assert link.executed == Wish(0.0, 0.0)
    sent = link.offer(0.0, Wish(0.123, 0.8))
    assert sent is not None and sent.type == "drive"
    assert sent.values == {"turn": 0.12, "throttle": 0.8}
    assert link.executed == Wish(0.12, 0.8)


def test_a_wish_within_the_deadband_waits_for_the_keepalive_which_resends_the_last() -> None:
    link = TeleopLink()
    link.offer(0.0, Wish(0.2, 0.5))
    for t in range(20, int(KEEPALIVE_MS), 20):
        assert link.offer(float(t), Wish(0.28, 0.42)) is None
        assert link.executed == Wish(0.2, 0.5)  # the car does what was sent, not the wish
    resent = link.offer(KEEPALIVE_MS, Wish(0.28, 0.42))
    assert resent is not None and resent.t == KEEPALIVE_MS
    assert resent.values == {"turn": 0.2, "throttle": 0.5}  # a re-send of the last command
    assert link.offer(KEEPALIVE_MS + 20, Wish(0.28, 0.42)) is None


def test_a_wish_past_the_deadband_is_sent_and_executed() -> None:
    link = TeleopLink()
    link.offer(0.0, Wish(0.0, 0.5))
    turned = link.offer(40.0, Wish(0.15, 0.5))
    assert turned is not None and turned.values == {"turn": 0.15, "throttle": 0.5}
    braked = link.offer(60.0, Wish(0.15, -0.3))
    assert braked is not None and link.executed == Wish(0.15, -0.3)
    assert link.offer(80.0, Wish(2.0, -5.0)) is not None  # clipped to [-1, 1]
    assert link.executed == Wish(1.0, -1.0)


def test_the_car_gets_gas_or_brake_from_the_throttle_and_steer_from_the_turn() -> None:
    assert car_action(Wish(-0.4, 0.7)) == (-0.4, 0.7, 0.0)
    assert car_action(Wish(0.3, -0.5)) == (0.3, 0.0, 0.5)
    assert car_action(Wish(0.0, 0.0)) == (0.0, 0.0, 0.0)


def straight_track() -> list[tuple[float, float]]:
    """A long loop whose first stretch runs along +y (where a car at angle 0 looks)."""
    up = [(0.0, 3.0 * i) for i in range(100)]
    return [*up, (30.0, 300.0), (30.0, -30.0)]


def test_the_follower_steers_back_to_the_centre_line_and_slows_for_bends() -> None:
    follower = TrackFollower(straight_track())
    on_line = follower.wish(CarPose(0.0, 0.0, 0.0, 20.0))
    assert abs(on_line.turn) < 0.01 and on_line.throttle > 0
    right_of_it = TrackFollower(straight_track()).wish(CarPose(3.0, 0.0, 0.0, 20.0))
    left_of_it = TrackFollower(straight_track()).wish(CarPose(-3.0, 0.0, 0.0, 20.0))
    assert right_of_it.turn < 0 < left_of_it.turn  # turn > 0 steers right
    curve = [(50 * math.cos(a / 20), 50 * math.sin(a / 20)) for a in range(126)]
    assert TrackFollower(curve).bend_ahead(0, 40) > follower.bend_ahead(0, 40) == 0


def lapsed_run(seed: int, steps: int = 20_000) -> list[tuple[float, float, float, bool]]:
    """(turn offset, throttle, attentive throttle, in a lapse) per 20 ms step of a car on
    the line of a bend."""
    lapses, car = Lapses(seed), CarPose(0.0, 0.0, 0.0, 50.0)
    curve = [(50 * math.cos(a / 20), 50 * math.sin(a / 20)) for a in range(126)]
    rows = []
    for step in range(steps):
        attentive = TrackFollower(curve).wish(car)
        wish = lapses.wish(step * 20.0, 20.0, TrackFollower(curve), car)
        rows.append((wish.turn - attentive.turn, wish.throttle, attentive.throttle,
                     lapses.until > step * 20.0))  # fmt: skip
    return rows


def test_the_recording_driver_lapses_now_and_then_and_the_same_way_for_a_seed() -> None:
    rows, style = lapsed_run(7), LapseStyle()
    assert rows == lapsed_run(7) and rows != lapsed_run(8)
    lapsing = sum(row[3] for row in rows) / len(rows)
    hesitation = style.shares[2]  # a hesitation lasts twice as long
    mean_share = (style.shortest + style.longest) / 2 * (1 + hesitation) / style.every
    assert 0.5 * mean_share < lapsing < 1.5 * mean_share  # 400 s: about 100 lapses
    drifts = [abs(turn) for turn, _, _, in_lapse in rows if in_lapse and turn != 0]
    assert drifts and min(drifts) >= style.drift[0] - 1e-9 and max(drifts) <= style.drift[1]
    steady = [(gas, usual) for turn, gas, usual, in_lapse in rows if in_lapse and turn == 0]
    assert any(gas > usual for gas, usual in steady)  # a missed bend: no braking for it
    assert any(gas == -style.hesitation_brake != usual for gas, usual in steady)
    assert all(turn == 0 and gas == usual for turn, gas, usual, in_lapse in rows if not in_lapse)


def test_without_gymnasium_synth_says_which_extra_to_install(monkeypatch) -> None:
    from rovertrain.sim.carracing import require_sim_packages

    for name in ("gymnasium", "Box2D", "pygame"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(RovertrainError) as raised:
        require_sim_packages()
    assert raised.value.code == "missing_dependency"
    assert "rovertrain[sim]" in raised.value.message


@pytest.mark.filterwarnings("ignore:builtin type .* has no __module__:DeprecationWarning")
@pytest.mark.parametrize(
    ("driver", "tiles"),
    [("continuous", 80), ("keyboard", 70)],  # the keyboard's gas key is 0.4: a slower start
)
def test_the_scripted_driver_makes_progress_on_the_track(driver: str, tiles: int) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("Box2D")
    from rovertrain.sim.carracing import drive_episode, make_env, track_seed

    env = make_env(500)
    try:
        frames: list[tuple[int, ...]] = []
        result = drive_episode(
            env, track_seed(0, 0), 500, lambda image: frames.append(image.shape), driver
        )
    finally:
        env.close()
    assert result["frames"] == len(frames) == 501 and frames[0] == (96, 96, 3)
    assert result["ended"] == "time"
    # 10 s of driving: about 120 of the track's ~300 tiles; standing still scores -50.
    assert result["tilesVisited"] > tiles and result["reward"] > 200


def test_synth_carracing_writes_sessions_that_inspect_accepts(cli, tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("Box2D")
    root = tmp_path / "root"
    args = ("--world", "carracing", "--sessions", "2", "--minutes", "0.1", "--seed", "1")
    result = cli("synth", "--out", str(root), *args)
    assert result.code == 0, result.stderr
    written = result.of("synthesized")[0]
    assert written["world"] == "carracing" and len(written["sessions"]) == 2
    job = json.loads((root / "job.json").read_text())
    assert job["sessions"] == [item["sessionId"] for item in written["sessions"]]
    assert job["actionThreshold"] == 0.5 and job["config"] == {"threads": 2, "evalEverySteps": 250}
    assert len({item["trackSeed"] for item in written["sessions"]}) == 2
    for item in written["sessions"]:
        folder = root / "recordings" / item["sessionId"]
        meta = json.loads((folder / "session.json").read_text())
        assert meta["commandRoles"] == {"drive": "movement"} and meta["roverId"] == "carracing"
        assert item["frames"] == 301  # 6 s at 50 fps and the reset observation
        log = (folder / "commands.ndjson").read_text().splitlines()
        lines = [json.loads(line) for line in log]
        assert lines[0]["t"] == 0 and all(line["type"] == "drive" for line in lines)
        turns = {line["values"]["turn"] for line in lines}
        throttles = {line["values"]["throttle"] for line in lines}
        assert len(turns) > 3 and len(throttles) > 3  # the driver steers and changes speed
        gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(lines)]
        assert max(gaps) <= KEEPALIVE_MS  # never silent longer than the keepalive
    inspected = cli("inspect", str(root))
    assert inspected.code == 0, inspected.stderr
    datasets = inspected.of("dataset")
    assert sorted(event["sessionId"] for event in datasets) == sorted(job["sessions"])
    assert all(event["windows"] > 0 for event in datasets)
    assert not inspected.of("skipped")


def test_carracing_refuses_shuffled_commands(cli, tmp_path: Path) -> None:
    out = str(tmp_path / "root")
    result = cli("synth", "--out", out, "--world", "carracing", "--shuffle-commands")
    assert result.code != 0 and result.last()["code"] == "usage"
