"""Closed-loop rollouts: the human model drives well in both worlds, the copycat does not, and a
policy is driven exactly as on a rover (its own commands fed back)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from rovertrain.sim.choices import DRIVERS, HAND_OVER, REST
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.hand_over import AT_REST, Copycat, PolicyDriver, Start
from rovertrain.sim.rollout import (
    RolloutRequest,
    Rollouts,
    closed_loop_report,
    rollout,
    rollout_metrics,
    run_controller,
)
from rovertrain.sim.world import World
from rovertrain.sim.worlds import WORLDS, human_opening, rollout_scenario

SEEDS = (0, 1, 2)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("world", sorted(WORLDS))
def test_the_human_model_stays_in_lane_and_stops_for_every_obstacle(
    world: str, driver: str
) -> None:
    rollouts = Rollouts(world, SEEDS, 90.0, controllers=("human",), driver=driver)
    report = closed_loop_report(rollouts)
    for row in report.rollouts:
        assert row.in_lane_fraction >= 0.95, row
        assert row.collided == 0 and row.passed == 0, row
        assert row.distance_m > 100 and row.moving_fraction > 0.7, row
    human = report.summaries["human"]
    assert human.obstacles_met >= len(SEEDS) and human.stop_rate == 1.0


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_the_copycat_leaves_the_lane_quickly(world: str) -> None:
    report = closed_loop_report(Rollouts(world, SEEDS, 60.0, controllers=("copycat",)))
    for row in report.rollouts:
        assert row.first_departure_s is not None and row.first_departure_s < 15, row
        assert row.in_lane_fraction < 0.5 and row.stopped_before_contact == 0, row


def test_rollouts_are_deterministic_and_the_world_does_not_depend_on_the_controller() -> None:
    first, trace = rollout(RolloutRequest("warehouse", 4, 40.0, "human"))
    again, _ = rollout(RolloutRequest("warehouse", 4, 40.0, "human"))
    assert first == again
    # Rendering (which draws lighting noise) must not move the obstacles of a seed.
    scenario = rollout_scenario("warehouse", 4)

    def camera(world: World) -> None:
        if world.t_ms % 200 == 0:
            world.render()

    rendered = run_controller(scenario.world, scenario.human, 40.0, after_move=camera)
    assert trace.obstacles
    assert [o.appeared_ms for o in rendered.obstacles] == [o.appeared_ms for o in trace.obstacles]
    assert rendered.x == trace.x


@dataclass
class Decision:
    fire: dict[str, bool]
    values: dict[str, dict[str, float]]
    steer: dict[str, bool]

    @property
    def send(self) -> dict[str, bool]:
        return {kind: fired or self.steer[kind] for kind, fired in self.fire.items()}


@dataclass
class ScriptedPolicy:
    """Drives straight ahead; remembers what it was shown and told."""

    schema: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"type": "stop", "values": [], "role": "stop"},
            {"type": "drive", "values": ["speed", "turn"], "role": "movement"},
        ]
    )
    tick_ms: int = 100
    observed: list[tuple[float, str, dict[str, float] | None]] = field(default_factory=list)
    ticks: list[float] = field(default_factory=list)
    frames: list[float] = field(default_factory=list)
    resets: int = 0

    def reset(self) -> None:
        self.resets += 1

    def observe_command(
        self, t_ms: float, command_type: str, values: Any = None, by: str = "human"
    ) -> bool:
        self.observed.append((t_ms, command_type, values))
        return True

    def tick(self, frame: np.ndarray, t_ms: float) -> Decision:
        self.ticks.append(t_ms)
        self.frames.append(float(frame.std()))
        # Not fired, steering: the driver sends what `send` says (the steering re-send too).
        return Decision({"drive": False}, {"drive": {"speed": 0.5, "turn": 0.0}}, {"drive": True})


def test_the_policy_is_ticked_every_100_ms_and_hears_its_own_commands() -> None:
    policy = ScriptedPolicy()
    scenario = rollout_scenario("road", 0)
    trace = run_controller(scenario.world, PolicyDriver(policy, AT_REST), 3.0)
    assert policy.resets == 1
    assert policy.ticks == [float(t) for t in range(0, 3000, 100)]
    assert policy.observed == [(t, "drive", {"speed": 0.5, "turn": 0.0}) for t in policy.ticks]
    assert [c.t for c in trace.commands] == policy.ticks
    assert min(policy.frames) > 10  # the camera, not a blank picture


def test_the_opening_is_the_first_drive_the_seeds_human_sends() -> None:
    for world in ("road", "warehouse"):
        for seed in (0, 3):
            opening = human_opening(world, seed)
            scenario = rollout_scenario(world, seed)
            trace = run_controller(scenario.world, scenario.human, 0.05)
            first = trace.commands[0]
            assert (opening.t, opening.type, opening.values) == (0.0, first.type, first.values)
    # Road seed 3 starts in a sharp bend: the straight opening of old put the rover off it.
    assert human_opening("road", 3).values == {"speed": 0.48, "turn": 0.81}
    assert WORLDS["road"].opening().values == {"speed": 0.6, "turn": 0.0}


def test_the_operator_hands_over_with_one_opening_command() -> None:
    # `drive --supervised` opens its field rollouts with the person's first command.
    policy = ScriptedPolicy()
    scenario = rollout_scenario("road", 0)
    opening = human_opening("road", 0)
    trace = run_controller(scenario.world, PolicyDriver(policy, Start(opening=opening)), 0.3)
    assert policy.observed[0] == (0.0, "drive", opening.values)
    assert trace.commands[0] == opening and len(trace.commands) == 4  # opening + 3 ticks
    blind = ScriptedPolicy()
    run_controller(rollout_scenario("road", 0).world, PolicyDriver(blind, AT_REST, blind=True), 1.0)
    assert blind.frames == [0.0] * 10  # one grey level


def test_a_drive_reports_every_start_and_the_human_drives_once_from_rest() -> None:
    policy = ScriptedPolicy()
    both = Rollouts("road", (0,), 3.0, lambda: policy, ("policy", "human"), (HAND_OVER, REST))
    report = closed_loop_report(both)
    assert [(r.controller, r.start) for r in report.rollouts] == [
        ("policy", HAND_OVER),
        ("human", REST),
        ("policy", REST),
    ]
    handed, parked = report.rollouts[0], report.rollouts[2]
    # Handed over: the person drove the first 2 s (their commands), then the policy ticks.
    scenario = rollout_scenario("road", 0)
    person = run_controller(scenario.world, scenario.human, 2.0).commands
    assert person and handed.command_counts["drive"] == len(person) + 10
    assert parked.command_counts == {"drive": 30}  # from rest: the policy's ticks alone
    assert set(report.starts) == {HAND_OVER, REST}
    assert report.summaries == report.starts[HAND_OVER].summaries  # the report's own: the first
    for figures in report.starts.values():  # the human is both starts' reference
        assert figures.summaries["human"] == report.starts[REST].summaries["human"]
    fields = report.summary_fields()
    assert set(fields["starts"]) == {"handOver", "rest"}
    assert fields["controllers"] == fields["starts"]["handOver"]["controllers"]


def test_closed_loop_report_has_every_baseline_and_the_margins() -> None:
    policy = ScriptedPolicy()
    report = closed_loop_report(Rollouts("road", (0, 1), 8.0, lambda: policy))
    assert [r.controller for r in report.rollouts] == [
        name for name in ("policy", "human", "copycat", "blind") for _ in (0, 1)
    ]
    assert set(report.margins) == {"human", "copycat", "blind"}
    # Straight ahead, like the copycat: no better in lane; the human is far ahead.
    assert report.margins["human"].in_lane_fraction < -0.3
    assert report.margins["blind"].in_lane_fraction == 0.0
    fields = report.summary_fields()
    assert fields["seeds"] == [0, 1] and set(fields["controllers"]) == set(report.summaries)
    # This policy sends at every 100 ms tick once handed over: several times the human's rate.
    rate = report.summaries["policy"].commands_per_second
    human_rate = report.summaries["human"].commands_per_second
    assert rate > 3 * human_rate
    assert report.margins["human"].command_rate_ratio == pytest.approx(rate / human_rate)
    assert fields["margins"]["human"]["commandRateRatio"] == round(rate / human_rate, 3)


def test_the_corridor_s_careful_driver_keeps_closer_to_the_centre_than_the_road_s() -> None:
    """Issue 27's world: its recordings never show the rover far off the centre line."""
    careful = closed_loop_report(Rollouts("corridor", SEEDS, 90.0, controllers=("human",)))
    road = closed_loop_report(Rollouts("road", SEEDS, 90.0, controllers=("human",)))
    assert careful.summaries["human"].mean_abs_offset < 0.1
    assert road.summaries["human"].mean_abs_offset > 3 * careful.summaries["human"].mean_abs_offset


def test_one_hand_over_for_every_world_a_lead_then_the_controller() -> None:
    # CarRacing's start (a driver has the rover first), here on a rover world: the same
    # Copycat and PolicyDriver take it. The policy ticks in the shadow and hears the lead.
    scenario = rollout_scenario("road", 0)
    policy = ScriptedPolicy()
    start = Start(1000.0, lead=scenario.human)
    trace = run_controller(scenario.world, PolicyDriver(policy, start), 1.5)
    led = [c for c in trace.commands if c.t < 1000.0]
    assert led and all(c.values != {"speed": 0.5, "turn": 0.0} for c in led)
    assert policy.ticks == [float(t) for t in range(0, 1500, 100)]  # in the shadow, then alone
    assert [c.t for c in trace.commands[len(led) :]] == [1000.0, 1100.0, 1200.0, 1300.0, 1400.0]
    assert [(t, kind) for t, kind, _ in policy.observed[: len(led)]] == [(c.t, c.type) for c in led]
    scenario = rollout_scenario("road", 0)
    copied = run_controller(scenario.world, Copycat(Start(1000.0, scenario.human)), 2.0)
    last = [c for c in copied.commands if c.t < 1000.0][-1]
    after = [c for c in copied.commands if c.t >= 1000.0]
    assert [(c.t, c.values) for c in after] == [(1000.0, last.values), (1500.0, last.values)]
    # From rest, nothing to copy: the copycat sends nothing.
    scenario = rollout_scenario("road", 0)
    assert run_controller(scenario.world, Copycat(AT_REST), 2.0).commands == []


class StopsOnSight:
    """Drives on the centre line and stands as soon as an obstacle is `sight` metres ahead
    (privileged: it reads the world), re-sending stop while it waits."""

    name = "policy"

    def __init__(self, sight: float):
        self.sight = sight

    def act(self, t_ms: float, camera: Any, world: World) -> list[SentCommand]:
        if t_ms % 500:
            return []
        ahead = world.obstacle_distance()
        if ahead is not None and ahead <= self.sight:
            return [SentCommand(t_ms, "stop")]
        turn = max(-1.0, min(1.0, world.track.curvature(world.pose.s) - world.pose.x))
        return [SentCommand(t_ms, "drive", {"speed": 0.6, "turn": turn})]


def test_the_stopping_distance_is_reported_and_stopping_short_clears_nothing() -> None:
    human = closed_loop_report(Rollouts("warehouse", SEEDS, 90.0, controllers=("human",)))
    person = human.summaries["human"]
    assert person.median_stop_distance is not None and 0.5 < person.median_stop_distance < 6.0
    assert person.stopped_short == 0
    fields = person.driving_fields()["obstacles"]
    assert fields["medianStopDistanceMetres"] == round(person.median_stop_distance, 2)
    scenario = rollout_scenario("warehouse", 0)
    trace = run_controller(scenario.world, StopsOnSight(12.0), 60.0)
    far = rollout_metrics(trace, 0)
    # It stood 12 m before its first pallet and waited there: nobody cleared it, the rover
    # never came near it (not `met`), and the stopping distance tells.
    assert far.stopped_short == 1 and far.stop_distances[0] > 6.0
    assert far.obstacles_met == 0 and far.distance_m < person.distance_m / 3
    assert trace.obstacles[0].outcome is None
