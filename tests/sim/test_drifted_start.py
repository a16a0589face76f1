"""The drifted start (`choices.DRIFTED`): the rover parked past its lane's edge, its nose out,
nothing sent; the person drives from there as that start's reference (issue 48: a rover that
has drifted where no person drove must turn away)."""

from __future__ import annotations

import numpy as np
import pytest

from rovertrain.sim.choices import DRIFT_OFFSET, DRIFTED, HAND_OVER, REST, Drift, drift_of
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.hand_over import reference_start, rollout_plan, taken_at
from rovertrain.sim.rollout import (
    RolloutRequest,
    Rollouts,
    back_in_lane_seconds,
    closed_loop_report,
    longest_return,
    rollout,
    run_controller,
)
from rovertrain.sim.world import LANE_HALF_WIDTH, MAX_OFFSET
from rovertrain.sim.worlds import WORLDS, rollout_scenario


def test_a_drifted_start_parks_the_rover_on_alternating_sides_past_the_edge() -> None:
    assert drift_of(HAND_OVER, 0) is None and drift_of(REST, 3) is None
    sides = [drift_of(DRIFTED, seed) for seed in range(4)]
    assert sides == [Drift(1.0), Drift(-1.0), Drift(1.0), Drift(-1.0)]
    for drift in (Drift(1.0), Drift(-1.0)):
        assert LANE_HALF_WIDTH < abs(drift.offset) < MAX_OFFSET
        assert np.sign(drift.heading) == np.sign(drift.offset)  # the nose points out


def test_the_person_drives_once_from_rest_and_once_from_the_drifted_place() -> None:
    plan = rollout_plan((HAND_OVER, REST, DRIFTED), ("policy", "human", "copycat"))
    assert [(p.controller, p.start) for p in plan] == [
        ("policy", HAND_OVER),
        ("human", REST),
        ("copycat", HAND_OVER),
        ("policy", REST),
        ("copycat", REST),
        ("policy", DRIFTED),
        ("human", DRIFTED),
        ("copycat", DRIFTED),
    ]
    assert taken_at("human", HAND_OVER) == REST and taken_at("human", DRIFTED) == DRIFTED
    assert [reference_start(s) for s in (HAND_OVER, REST, DRIFTED)] == [REST, REST, DRIFTED]


def test_back_in_lane_counts_from_the_start_and_a_summary_takes_the_worst_seed() -> None:
    assert back_in_lane_seconds(np.array([0.2, 1.3]), 10) == 0.0  # started inside
    assert back_in_lane_seconds(np.array([1.45, 1.5, 1.2, 0.9, 0.5]), 10) == 0.04  # as departures
    assert back_in_lane_seconds(np.array([-1.45, -1.6, -1.6]), 10) is None
    assert longest_return([0.0, 2.5, 1.0]) == 2.5
    assert longest_return([0.0, None, 1.0]) is None


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_from_the_drifted_place_the_person_turns_back_and_the_copycat_stays_out(
    world: str,
) -> None:
    for seed in (0, 1):  # both sides
        human, trace = rollout(RolloutRequest(world, seed, 20.0, "human", start=DRIFTED))
        assert human.start == DRIFTED
        assert abs(trace.x[0]) > LANE_HALF_WIDTH and np.sign(trace.x[0]) == drift_side(seed)
        assert human.back_in_lane_s is not None and 0 < human.back_in_lane_s < 6, human
        assert human.in_lane_fraction > 0.7, human
        # Nothing to repeat from a parked start: the copycat never leaves the kerb.
        copycat, _ = rollout(RolloutRequest(world, seed, 5.0, "copycat", start=DRIFTED))
        assert copycat.back_in_lane_s is None and copycat.in_lane_fraction == 0.0


def drift_side(seed: int) -> float:
    drift = drift_of(DRIFTED, seed)
    assert drift is not None
    return drift.side


def test_a_drifted_start_is_judged_against_the_person_s_drifted_rollouts() -> None:
    report = closed_loop_report(
        Rollouts("road", (0,), 10.0, controllers=("human", "copycat"), starts=(REST, DRIFTED))
    )
    assert [(r.controller, r.start) for r in report.rollouts] == [
        ("human", REST),
        ("copycat", REST),
        ("human", DRIFTED),
        ("copycat", DRIFTED),
    ]
    rest, drifted = report.starts[REST], report.starts[DRIFTED]
    assert rest.summaries["human"].back_in_lane_s == 0.0
    back = drifted.summaries["human"].back_in_lane_s
    assert back is not None and back > 0
    assert drifted.summaries["copycat"].back_in_lane_s is None
    fields = report.summary_fields()
    assert set(fields["starts"]) == {"rest", "drifted"}
    assert fields["starts"]["drifted"]["controllers"]["human"]["backInLaneSeconds"] == back
    assert report.rollouts[3].mean_abs_offset == pytest.approx(DRIFT_OFFSET)  # parked there


class Straight:
    """Drives on with the wheel straight, from its first tick: where the nose points, it goes."""

    name = "straight"

    def act(self, t_ms: float, camera: object, world: object) -> list[SentCommand]:
        return [SentCommand(t_ms, "drive", {"speed": 0.5, "turn": 0.0})] if t_ms == 0 else []


@pytest.mark.parametrize("seed", [0, 1])
def test_the_drifted_rover_s_nose_points_out_of_its_lane(seed: int) -> None:
    scenario = rollout_scenario("road", seed)
    drift = drift_of(DRIFTED, seed)
    assert drift is not None
    scenario.world.pose.x, scenario.world.pose.heading = drift.offset, drift.heading
    trace = run_controller(scenario.world, Straight(), 0.9)
    assert abs(trace.x[-1]) == MAX_OFFSET and np.sign(trace.x[-1]) == drift.side  # at the kerb
