"""The simulator's physics, obstacles and metrics as pure functions: no torch, no av."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pytest

from rovertrain.sim.drivers import SentCommand, commands_from_decision
from rovertrain.sim.rollout import (
    DRIVING_ONLY,
    NO_FIGURES,
    ControllerSummary,
    RolloutTrace,
    lane_figures,
    margin,
    obstacle_figures,
    rollout_metrics,
)
from rovertrain.sim.world import (
    MAX_HEADING,
    MAX_OFFSET,
    METRES_PER_SPEED,
    STEP_MS,
    AisleTrack,
    Obstacle,
    ObstacleRules,
    World,
)

ROLES = {"stop": "stop", "drive": "movement", "horn": "other"}


@dataclass(frozen=True)
class Straight:
    bend: float = 0.0

    def curvature(self, s: float) -> float:
        return self.bend


class Blank:
    def frame(self, world: World) -> np.ndarray:
        return np.zeros((4, 4, 3), dtype=np.uint8)


def world(bend: float = 0.0, first_obstacle_ms: float = math.inf) -> World:
    rng = random.Random(0)
    return World(
        track=Straight(bend),
        rules=ObstacleRules(gap_ms=(1e9, 1e9), clear_ms=(2_000.0, 2_000.0)),
        renderer=Blank(),
        roles=ROLES,
        next_obstacle_ms=first_obstacle_ms,
        events_rng=rng,
        light_rng=rng,
    )


Commands = list[tuple[str, dict[str, float] | None]]


def tick(w: World, commands: Commands | None = None) -> None:
    w.begin_tick()
    for command_type, values in commands or []:
        w.apply(command_type, values)
    w.move(STEP_MS)
    w.end_tick(STEP_MS)


def drive(speed: float, turn: float = 0.0) -> Commands:
    return [("drive", {"speed": speed, "turn": turn})]


def until(w: World, done: object, commands: Commands, limit_ms: float = 60_000) -> None:
    """Tick, sending `commands` every 500 ms (a keepalive), until `done()`."""
    assert callable(done)
    while not done():
        assert w.t_ms < limit_ms, "never happened"
        tick(w, commands if w.t_ms % 500 == 0 else None)


def test_driving_straight_on_a_straight_track_keeps_offset_and_heading() -> None:
    w = world()
    w.apply("drive", {"speed": 0.5, "turn": 0.0})
    for _ in range(100):
        tick(w)
    assert w.pose.s == pytest.approx(0.5 * METRES_PER_SPEED * 1.0)
    assert w.pose.x == 0.0 and w.pose.heading == 0.0 and w.t_ms == 1000


def test_turning_against_the_track_drifts_and_is_bounded() -> None:
    w = world(bend=0.5)  # the track bends, the rover goes straight: it leaves on the outside
    tick(w, drive(1.0))
    assert w.pose.heading < 0 and w.pose.x < 0
    until(w, lambda: w.t_ms >= 20_000, drive(1.0))
    assert w.pose.heading == -MAX_HEADING and w.pose.x == -MAX_OFFSET
    w.apply("drive", {"speed": 1.0, "turn": 0.5})  # matching the bend holds the heading
    heading = w.pose.heading
    tick(w)
    assert w.pose.heading == heading


def test_a_rover_at_rest_does_not_turn_and_values_are_clamped() -> None:
    w = world(bend=0.5)
    w.apply("drive", {"speed": -2.0, "turn": 7.0})
    assert (w.pose.speed, w.pose.turn) == (0.0, 1.0)
    tick(w)
    assert w.pose.heading == 0.0 and w.pose.s == 0.0
    w.apply("drive", {"speed": 0.4, "turn": 0.2})
    w.apply("stop", None)
    assert (w.pose.speed, w.pose.turn) == (0.0, 0.0)


def test_obstacles_appear_only_while_moving_and_clear_after_a_stop_in_front() -> None:
    w = world(first_obstacle_ms=100)
    for _ in range(20):
        tick(w)
    assert w.obstacle is None  # at rest: nothing appears
    tick(w, drive(0.5))
    tick(w)
    obstacle = w.obstacle
    assert obstacle is not None and obstacle.at == pytest.approx(16.0 + w.pose.s, abs=0.03)
    until(w, lambda: obstacle.at - w.pose.s <= 3.0, drive(0.5))
    tick(w, [("stop", None)])
    assert obstacle.rested_ms is not None and obstacle.clear_at == obstacle.rested_ms + 2000
    until(w, lambda: w.obstacle is None, [])
    assert obstacle.outcome == "stopped" and obstacle.met
    assert obstacle_figures([obstacle]) == (1, 1, 0, 0)


def test_stopping_far_away_does_not_clear_and_driving_on_collides() -> None:
    w = world(first_obstacle_ms=0)
    tick(w, drive(0.5))
    tick(w)
    obstacle = w.obstacle
    assert obstacle is not None
    tick(w, [("stop", None)])  # 16 m before it: too far to count as stopping for it
    assert obstacle.clear_at is None
    until(w, lambda: w.obstacle is None, drive(0.5))
    assert obstacle.outcome == "collided"
    assert obstacle_figures([obstacle]) == (1, 0, 1, 0)


def test_passing_beside_the_lane_is_not_a_collision() -> None:
    w = world(first_obstacle_ms=0)
    w.pose.x = 1.2
    tick(w, drive(1.0))
    tick(w)
    assert w.obstacle is not None
    until(w, lambda: w.obstacle is None, drive(1.0))
    assert w.obstacles[0].outcome == "passed"
    assert obstacle_figures(w.obstacles) == (1, 0, 0, 1)


def test_other_role_commands_are_signals_that_warn_bystanders_close_ahead() -> None:
    w = world()
    w.bystander_gap = (100.0, 100.0)
    from rovertrain.sim.world import Bystander

    w.bystanders = [Bystander(5.0, 1.0), Bystander(30.0, -1.0)]
    w.apply("horn", None)
    assert w.signals == [(0.0, "horn")]
    assert [b.warned for b in w.bystanders] == [True, False]
    assert (w.pose.speed, w.pose.turn) == (0.0, 0.0)


def test_aisle_tracks_are_straight_runs_and_tight_corners() -> None:
    track = AisleTrack.generate(random.Random(3), length=300.0)
    samples = [track.curvature(s / 10) for s in range(3000)]
    assert samples[0] == 0.0
    straight = sum(value == 0.0 for value in samples) / len(samples)
    assert 0.7 < straight < 0.95
    assert all(value == 0.0 or 0.55 <= abs(value) <= 0.8 for value in samples)


def test_lane_figures() -> None:
    x = np.array([0.0, 0.5, -1.0, 1.2, -1.5, 0.2])
    inside, mean_offset, departure = lane_figures(x, 10)
    assert inside == pytest.approx(4 / 6)
    assert mean_offset == pytest.approx(4.4 / 6)
    assert departure == pytest.approx(0.04)
    assert lane_figures(np.zeros(5), 10) == (1.0, 0.0, None)


def test_obstacle_figures_count_only_obstacles_that_were_reached() -> None:
    never = Obstacle(at=50.0, appeared_ms=0.0)
    resting = Obstacle(at=20.0, appeared_ms=0.0, rested_ms=5.0, met=False)
    hit_after_rest = Obstacle(at=20.0, appeared_ms=0.0, rested_ms=5.0, outcome="collided", met=True)
    approaching = Obstacle(at=20.0, appeared_ms=0.0, met=True)
    assert obstacle_figures([never, resting, hit_after_rest, approaching]) == (3, 1, 1, 0)


def test_rollout_metrics_from_a_trace() -> None:
    trace = RolloutTrace("copycat", seconds=2.0, s=[0.0, 1.0, 2.0, 3.0], x=[0.0, 0.9, 1.1, 1.3])
    trace.moving = [True, True, False, True]
    trace.commands = [SentCommand(0.0, "drive", {"speed": 0.6, "turn": 0.0})] * 4
    metrics = rollout_metrics(trace, seed=3)
    assert metrics.in_lane_fraction == 0.5 and metrics.first_departure_s == 0.03
    assert metrics.commands_per_second == 2.0 and metrics.command_counts == {"drive": 4}
    assert metrics.distance_m == 3.0 and metrics.stop_rate is None
    assert metrics.moving_fraction == 0.75
    fields = metrics.event_fields()
    assert fields["obstacles"]["met"] == 0 and fields["seed"] == 3


def test_decisions_become_commands_stop_first() -> None:
    schema = [
        {"type": "stop", "values": [], "role": "stop"},
        {"type": "drive", "values": ["speed", "turn"], "role": "movement"},
        {"type": "horn", "values": [], "role": "other"},
    ]
    values = {"stop": {}, "drive": {"speed": 0.61234, "turn": -0.2}, "horn": {}}
    both = commands_from_decision(100.0, schema, {"stop": True, "drive": True}, values)
    assert both == [SentCommand(100.0, "stop", None)]
    moving = commands_from_decision(100.0, schema, {"drive": True, "horn": True}, values)
    assert moving == [
        SentCommand(100.0, "drive", {"speed": 0.6123, "turn": -0.2}),
        SentCommand(100.0, "horn", None),
    ]
    assert commands_from_decision(100.0, schema, {}, values) == []


def test_margins_are_policy_minus_baseline() -> None:
    def summary(name: str, lane: float, stopped: int, distance: float) -> ControllerSummary:
        return ControllerSummary(
            name,
            0,
            NO_FIGURES,
            in_lane_fraction=lane,
            mean_abs_offset=0.2,
            first_departure_s=None,
            back_in_lane_s=0.0,
            distance_m=distance,
            moving_fraction=0.8,
            obstacles_met=4,
            stopped_before_contact=stopped,
            collided=4 - stopped,
            passed=0,
            commands_per_second=2,
        )

    policy, copycat = summary("policy", 0.9, 3, 200.0), summary("copycat", 0.2, 0, 250.0)
    gap = margin(policy, copycat, DRIVING_ONLY)
    assert gap.in_lane_fraction == pytest.approx(0.7)
    assert gap.stop_rate == pytest.approx(0.75)
    assert gap.distance_ratio == pytest.approx(0.8)


def test_step_applies_commands_advances_and_returns_the_frame() -> None:
    w = world()
    frame = w.step([("drive", {"speed": 1.0, "turn": 0.0})], 100)
    assert frame.shape == (4, 4, 3) and w.t_ms == 100
    assert w.pose.s == pytest.approx(0.4)
    w.step([("stop", None)], 50)
    assert w.t_ms == 150 and w.pose.s == pytest.approx(0.4)


def test_a_moving_rover_stops_when_movement_commands_stop_coming() -> None:
    w = world(first_obstacle_ms=0)
    tick(w, drive(0.5))
    until(w, lambda: w.t_ms > 1000, [])
    assert w.moving  # 1 s after the last drive: still moving
    tick(w)  # 1010 ms
    assert not w.moving and w.pose.turn == 0.0
    assert w.obstacle is not None and w.obstacle.clear_at is None  # far away: not stopped for
    until(w, lambda: w.obstacle is not None and w.obstacle.at - w.pose.s < 5, drive(0.5))
    until(w, lambda: not w.moving, [("horn", None)])  # a signal is no movement command
    assert w.obstacle.rested_ms is not None  # coming to rest close before it counts
