"""Closed loop: a controller drives a world; what happened, measured.

`run_controller` is the loop (10 ms ticks: scheduled events, the controller's commands, the
physics) shared with the recording writer. `rollout_metrics` turns its `RolloutTrace` into
figures (pure); `controller_summary` pools a controller's rollouts over the seeds;
`closed_loop_report` drives the policy and its baselines over world seeds.

Definitions (docs/simulator.md): the rover is inside the lane while |offset| <= 1 (lane
half-widths), sampled every 10 ms; an obstacle is met once the rover came within 5 m of it
(or stopped for it); stopped before contact when the rover came to rest at most 6 m before it
and did not touch it afterwards; collided when the rover reached it with |offset| < 0.5;
passed when the rover went by it beside the lane.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from rovertrain.sim.choices import CONTINUOUS, HAND_OVER, STARTS, drift_of
from rovertrain.sim.drivers import Controller, SentCommand, TickPolicy
from rovertrain.sim.hand_over import (
    Copycat,
    PolicyDriver,
    Start,
    reference_start,
    rollout_plan,
    start_named,
    taken_at,
)
from rovertrain.sim.world import LANE_HALF_WIDTH, REST_RANGE, STEP_MS, Obstacle, World
from rovertrain.sim.worlds import rollout_scenario

BASELINES = ("human", "copycat", "blind")
FRAME_MS = 100


@dataclass
class RolloutTrace:
    """Everything one rollout did, one row per 10 ms tick."""

    controller: str
    seconds: float
    s: list[float] = field(default_factory=list)
    x: list[float] = field(default_factory=list)
    moving: list[bool] = field(default_factory=list)
    commands: list[SentCommand] = field(default_factory=list)
    obstacles: list[Obstacle] = field(default_factory=list)
    bystanders_met: int = 0
    bystanders_warned: int = 0
    curvature: Callable[[float], float] | None = None  # the track's, at a distance along it


FrameSink = Callable[[np.ndarray, float, list[SentCommand]], None]
"""A video's sink: a frame every 100 ms, the rover's offset from the centre line then (lane
half-widths), and the commands sent since the previous frame."""


def run_controller(
    world: World,
    controller: Controller[World],
    seconds: float,
    *,
    after_move: Callable[[World], None] | None = None,
    on_frame: FrameSink | None = None,
) -> RolloutTrace:
    """Drive `world` with `controller` for `seconds`. `after_move` runs after each tick's
    physics (the recorder's camera); `on_frame` gets a frame every 100 ms (a video)."""
    end_ms = seconds * 1000.0
    trace = RolloutTrace(controller.name, seconds, curvature=world.track.curvature)
    frame: list[np.ndarray] = []

    def camera() -> np.ndarray:
        if not frame:
            frame.append(world.render())
        return frame[0]

    recent: list[SentCommand] = []
    while world.t_ms < end_ms:
        world.begin_tick()
        frame.clear()
        sent = controller.act(world.t_ms, camera, world)
        for command in sent:
            world.apply(command.type, command.values)
        trace.commands.extend(sent)
        if on_frame is not None:
            recent.extend(sent)
            if world.t_ms % FRAME_MS == 0:
                on_frame(camera(), world.pose.x, recent)
                recent = []
        world.move(STEP_MS)
        trace.s.append(world.pose.s)
        trace.x.append(world.pose.x)
        trace.moving.append(world.moving)
        if after_move is not None:
            after_move(world)
        world.end_tick(STEP_MS)
    trace.obstacles = list(world.obstacles)
    passed = [b for b in world.bystanders if b.at <= world.pose.s]
    trace.bystanders_met = len(passed)
    trace.bystanders_warned = sum(b.warned for b in passed)
    return trace


class OwnFigures(Protocol):
    """A world's own figures beside the driving figures every world reports: one rollout's,
    a controller's pooled over the seeds, or the policy's margin over a baseline (CarRacing's
    race, a supervised drive's take-overs)."""

    def own_fields(self) -> dict[str, object]:
        """The event's fields they add (`{"race": {...}}`; none on a plain rover drive)."""
        ...

    def words(self) -> str:
        """What a person reads of them after the driving figures (stderr)."""
        ...


@dataclass(frozen=True)
class NoOwnFigures:
    """A world that reports the driving figures only."""

    def own_fields(self) -> dict[str, object]:
        return {}

    def words(self) -> str:
        return ""


NO_FIGURES = NoOwnFigures()
RowT = TypeVar("RowT", bound=OwnFigures, covariant=True)  # a rollout's own figures
PoolT = TypeVar("PoolT", bound=OwnFigures, covariant=True)  # pooled over the seeds
GapT = TypeVar("GapT", bound=OwnFigures, covariant=True)  # a margin's
Row = TypeVar("Row", bound=OwnFigures)
Pool = TypeVar("Pool", bound=OwnFigures)
Gap = TypeVar("Gap", bound=OwnFigures)


@dataclass(frozen=True)
class FiguresKind(Generic[Row, Pool, Gap]):
    """How a world pools its own figures over the seeds and compares two controllers'."""

    pool: Callable[[Sequence[Row]], Pool]
    margin: Callable[[Pool, Pool], Gap]


def _no_pool(rows: Sequence[OwnFigures]) -> NoOwnFigures:
    return NO_FIGURES


def _no_margin(policy: OwnFigures, baseline: OwnFigures) -> NoOwnFigures:
    return NO_FIGURES


DRIVING_ONLY: FiguresKind[NoOwnFigures, NoOwnFigures, NoOwnFigures] = FiguresKind(
    _no_pool, _no_margin
)


@dataclass(frozen=True, kw_only=True)
class DrivingFigures:
    """The driving figures every world reports, for a rollout and for a controller's summary
    (the base record; a world's own figures come beside them, typed by the world: `own`)."""

    in_lane_fraction: float
    mean_abs_offset: float
    first_departure_s: float | None  # a summary's: the earliest over the seeds
    # Back inside the lane after this many seconds (0: started there; None: never); a
    # summary's: the longest over the seeds, None when one never got back.
    back_in_lane_s: float | None
    distance_m: float
    moving_fraction: float
    obstacles_met: int
    stopped_before_contact: int
    collided: int
    passed: int
    commands_per_second: float
    stop_distances: tuple[float, ...] = ()  # metres ahead at the first standstill, per obstacle
    stopped_short: int = 0  # obstacles first stood for further than REST_RANGE ahead

    @property
    def stop_rate(self) -> float | None:
        return self.stopped_before_contact / self.obstacles_met if self.obstacles_met else None

    @property
    def median_stop_distance(self) -> float | None:
        return float(np.median(self.stop_distances)) if self.stop_distances else None

    def driving_fields(self) -> dict[str, object]:
        """The `rollout` event's and the `drove` summary's shared fields, in their order."""
        stop_rate = self.stop_rate
        return {
            "inLaneFraction": round(self.in_lane_fraction, 4),
            "meanAbsOffset": round(self.mean_abs_offset, 4),
            "firstDepartureSeconds": self.first_departure_s,
            "backInLaneSeconds": self.back_in_lane_s,
            "distanceMetres": round(self.distance_m, 2),
            "movingFraction": round(self.moving_fraction, 4),
            "obstacles": {
                "met": self.obstacles_met,
                "stoppedBeforeContact": self.stopped_before_contact,
                "collided": self.collided,
                "passed": self.passed,
                "stopRate": None if stop_rate is None else round(stop_rate, 4),
                "stoppedShort": self.stopped_short,
                "medianStopDistanceMetres": _rounded(self.median_stop_distance, 2),
            },
            "commandsPerSecond": round(self.commands_per_second, 3),
        }


@dataclass(frozen=True)
class RolloutMetrics(DrivingFigures, Generic[RowT]):
    """One rollout: the driving figures, what was sent, and the world's own figures."""

    controller: str
    seed: int
    seconds: float
    command_counts: dict[str, int]
    bystanders_met: int
    bystanders_warned: int
    own: RowT  # the world's own figures
    start: str = HAND_OVER  # how the controller got the rover (`choices.STARTS`)

    def event_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {
            "controller": self.controller,
            "seed": self.seed,
            "start": self.start,
            "seconds": self.seconds,
            **self.driving_fields(),
            "commandCounts": self.command_counts,
            "bystanders": {"met": self.bystanders_met, "warned": self.bystanders_warned},
            **self.own.own_fields(),
        }
        return fields


AnyRollout = RolloutMetrics[OwnFigures]


def with_own(metrics: AnyRollout, own: Row) -> RolloutMetrics[Row]:
    """`metrics` with other own figures (a supervised rollout's take-overs)."""
    fields: dict[str, Any] = {
        item.name: getattr(metrics, item.name) for item in dataclasses.fields(metrics)
    }
    fields["own"] = own
    return RolloutMetrics(**fields)


def lane_figures(x: np.ndarray, step_ms: float) -> tuple[float, float, float | None]:
    """(fraction of ticks inside the lane, mean |offset|, seconds to the first departure:
    the first tick outside after one inside, so that a rover parked outside its lane (a
    drifted start) departs only once it has been back)."""
    if not len(x):
        return 1.0, 0.0, None
    outside = np.abs(x) > LANE_HALF_WIDTH
    back = int(np.argmax(~outside)) if not outside.all() else len(x)
    later = outside[back:]
    first = back + int(np.argmax(later)) if later.any() else None
    departure = None if first is None else round((first + 1) * step_ms / 1000.0, 2)
    return float(1.0 - outside.mean()), float(np.abs(x).mean()), departure


def back_in_lane_seconds(x: np.ndarray, step_ms: float) -> float | None:
    """Seconds until the rover is first inside the lane: 0 when it starts there (every start
    but a drifted one), None when it never gets back. Counted as `lane_figures` counts the
    departure: sample k is the end of step k + 1."""
    inside = np.abs(x) <= LANE_HALF_WIDTH
    if not inside.any():
        return None
    first = int(np.argmax(inside))
    return 0.0 if first == 0 else round((first + 1) * step_ms / 1000.0, 2)


def back_in_lane_words(seconds: float | None) -> str:
    """How long the rover took to get back into its lane, where it started outside (a
    drifted start: its worst seed); nothing where it started inside."""
    if seconds is None:
        return ", never back in the lane"
    return f", back in the lane after {seconds:.1f} s" if seconds > 0 else ""


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def stop_distances(obstacles: Sequence[Obstacle]) -> tuple[tuple[float, ...], int]:
    """(how far ahead each obstacle was when the rover first stood in front of it, how many
    of those were further than `REST_RANGE`: stopped short, where nobody clears it)."""
    distances = tuple(o.rest_distance for o in obstacles if o.rest_distance is not None)
    return distances, sum(distance > REST_RANGE for distance in distances)


def obstacle_figures(obstacles: Sequence[Obstacle]) -> tuple[int, int, int, int]:
    """(met, stopped before contact, collided, passed). An obstacle the rover rested in front
    of when the rollout ended counts as stopped for."""
    met = stopped = collided = passed = 0
    for obstacle in obstacles:
        if not (obstacle.met or obstacle.outcome is not None or obstacle.rested_ms is not None):
            continue
        met += 1
        if obstacle.outcome == "collided":
            collided += 1
        elif obstacle.outcome == "passed":
            passed += 1
        elif obstacle.rested_ms is not None:
            stopped += 1
    return met, stopped, collided, passed


def command_counts(commands: Sequence[SentCommand]) -> dict[str, int]:
    """How many commands of each type were sent, in the order the types first appear."""
    counts: dict[str, int] = {}
    for command in commands:
        counts[command.type] = counts.get(command.type, 0) + 1
    return counts


def rollout_metrics(
    trace: RolloutTrace, seed: int, start: str = HAND_OVER
) -> RolloutMetrics[NoOwnFigures]:
    x = np.asarray(trace.x, dtype=np.float64)
    in_lane, mean_offset, departure = lane_figures(x, STEP_MS)
    met, stopped, collided, passed = obstacle_figures(trace.obstacles)
    distances, short = stop_distances(trace.obstacles)
    counts = command_counts(trace.commands)
    return RolloutMetrics(
        controller=trace.controller,
        seed=seed,
        seconds=trace.seconds,
        in_lane_fraction=in_lane,
        mean_abs_offset=mean_offset,
        first_departure_s=departure,
        back_in_lane_s=back_in_lane_seconds(x, STEP_MS),
        distance_m=trace.s[-1] if trace.s else 0.0,
        moving_fraction=float(np.mean(trace.moving)) if trace.moving else 0.0,
        obstacles_met=met,
        stopped_before_contact=stopped,
        collided=collided,
        passed=passed,
        commands_per_second=len(trace.commands) / trace.seconds if trace.seconds else 0.0,
        stop_distances=distances,
        stopped_short=short,
        command_counts=counts,
        bystanders_met=trace.bystanders_met,
        bystanders_warned=trace.bystanders_warned,
        own=NO_FIGURES,
        start=start,
    )


@dataclass(frozen=True)
class ControllerSummary(DrivingFigures, Generic[PoolT]):
    """One controller over all seeds: lane figures averaged per seed, obstacles pooled."""

    controller: str
    departed_seeds: int
    own: PoolT  # the world's own figures, pooled

    def event_fields(self) -> dict[str, object]:
        return {
            **self.driving_fields(),
            "departedSeeds": self.departed_seeds,
            **self.own.own_fields(),
        }


def longest_return(seconds: Sequence[float | None]) -> float | None:
    """The summary's `back_in_lane_s`: the longest over the seeds, None when a seed never
    got back (a worst case, as `first_departure_s` is the earliest)."""
    if any(value is None for value in seconds):
        return None
    return max((value for value in seconds if value is not None), default=0.0)


def controller_summary(
    rows: Sequence[RolloutMetrics[Row]], kind: FiguresKind[Row, Pool, Gap]
) -> ControllerSummary[Pool]:
    """One controller's rollouts (all of the same controller) pooled over the seeds."""
    departures = [r.first_departure_s for r in rows if r.first_departure_s is not None]
    return ControllerSummary(
        controller=rows[0].controller,
        in_lane_fraction=float(np.mean([r.in_lane_fraction for r in rows])),
        mean_abs_offset=float(np.mean([r.mean_abs_offset for r in rows])),
        first_departure_s=min(departures) if departures else None,
        back_in_lane_s=longest_return([r.back_in_lane_s for r in rows]),
        departed_seeds=len(departures),
        distance_m=float(np.mean([r.distance_m for r in rows])),
        moving_fraction=float(np.mean([r.moving_fraction for r in rows])),
        obstacles_met=sum(r.obstacles_met for r in rows),
        stopped_before_contact=sum(r.stopped_before_contact for r in rows),
        collided=sum(r.collided for r in rows),
        passed=sum(r.passed for r in rows),
        commands_per_second=float(np.mean([r.commands_per_second for r in rows])),
        stop_distances=tuple(d for r in rows for d in r.stop_distances),
        stopped_short=sum(r.stopped_short for r in rows),
        own=kind.pool([r.own for r in rows]),
    )


@dataclass(frozen=True)
class Margin(Generic[GapT]):
    """The policy minus a baseline (positive: the policy did better, except offset)."""

    baseline: str
    in_lane_fraction: float
    mean_abs_offset: float
    stop_rate: float | None
    distance_ratio: float | None
    stop_distance_ratio: float | None  # the policy's median stopping distance over the baseline's
    command_rate_ratio: float | None  # the policy's commands per second over the baseline's
    own: GapT  # the world's own figures compared

    def event_fields(self) -> dict[str, object]:
        return {
            "inLaneFraction": round(self.in_lane_fraction, 4),
            "meanAbsOffset": round(self.mean_abs_offset, 4),
            "stopRate": None if self.stop_rate is None else round(self.stop_rate, 4),
            "distanceRatio": _rounded(self.distance_ratio, 3),
            "stopDistanceRatio": _rounded(self.stop_distance_ratio, 3),
            "commandRateRatio": _rounded(self.command_rate_ratio, 3),
            **self.own.own_fields(),
        }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def margin(
    policy: ControllerSummary[Pool],
    baseline: ControllerSummary[Pool],
    kind: FiguresKind[Row, Pool, Gap],
) -> Margin[Gap]:
    stop = None
    if policy.stop_rate is not None and baseline.stop_rate is not None:
        stop = policy.stop_rate - baseline.stop_rate
    return Margin(
        baseline=baseline.controller,
        in_lane_fraction=policy.in_lane_fraction - baseline.in_lane_fraction,
        mean_abs_offset=policy.mean_abs_offset - baseline.mean_abs_offset,
        stop_rate=stop,
        distance_ratio=ratio(policy.distance_m, baseline.distance_m),
        stop_distance_ratio=ratio(policy.median_stop_distance, baseline.median_stop_distance),
        command_rate_ratio=ratio(policy.commands_per_second, baseline.commands_per_second),
        own=kind.margin(policy.own, baseline.own),
    )


@dataclass(frozen=True)
class StartFigures(Generic[PoolT, GapT]):
    """One start's figures: each controller pooled, the policy's margin over each other."""

    summaries: Mapping[str, ControllerSummary[PoolT]]
    margins: Mapping[str, Margin[GapT]]  # baseline name -> the policy's margin over it

    def event_fields(self) -> dict[str, object]:
        return {
            "controllers": {
                name: summary.event_fields() for name, summary in self.summaries.items()
            },
            "margins": {name: m.event_fields() for name, m in self.margins.items()},
        }


@dataclass(frozen=True)
class ClosedLoopReport(Generic[RowT, PoolT, GapT]):
    """The rollouts of a drive, each controller's pooled figures, the policy's margins: per
    start (`starts`), and the first start's as the report's own (`summaries`, `margins`)."""

    world: str
    seeds: tuple[int, ...]
    seconds: float
    rollouts: tuple[RolloutMetrics[RowT], ...]
    summaries: Mapping[str, ControllerSummary[PoolT]]
    margins: Mapping[str, Margin[GapT]]  # baseline name -> the policy's margin over it
    starts: Mapping[str, StartFigures[PoolT, GapT]]

    def summary_fields(self) -> dict[str, object]:
        first = StartFigures(self.summaries, self.margins)
        return {
            "world": self.world,
            "seeds": list(self.seeds),
            "seconds": self.seconds,
            **first.event_fields(),
            "starts": {name: figures.event_fields() for name, figures in self.starts.items()},
        }


AnyReport = ClosedLoopReport[OwnFigures, OwnFigures, OwnFigures]
DrivingReport = ClosedLoopReport[NoOwnFigures, NoOwnFigures, NoOwnFigures]


def make_controller(
    name: str, policy_factory: Callable[[], TickPolicy] | None, start: Start[World]
) -> Controller[World]:
    """The copycat or a policy driver, taking the rover at `start`."""
    if name in ("policy", "blind"):
        if policy_factory is None:
            raise ValueError(f"controller {name!r} needs a policy")
        return PolicyDriver(policy_factory(), start, blind=name == "blind")
    if name == "copycat":
        return Copycat(start)
    raise ValueError(f"unknown controller {name!r}")


@dataclass(frozen=True)
class RolloutRequest:
    """One rollout on a rover world: `controller` on world seed `seed` for `seconds`, taking
    the rover at `start` (`choices.STARTS`; the human drives from rest, or drifted:
    `hand_over.taken_at`).
    `policy` makes the policy a policy driver drives (called once per rollout; a cached policy
    is fine: the driver resets it). `driver`: who the human is (`choices.DRIVERS`)."""

    world: str
    seed: int
    seconds: float
    controller: str
    policy: Callable[[], TickPolicy] | None = None
    start: str = HAND_OVER
    driver: str = CONTINUOUS


def rollout(
    request: RolloutRequest, on_frame: FrameSink | None = None
) -> tuple[RolloutMetrics[NoOwnFigures], RolloutTrace]:
    """One controller on its world seed (the human model is the scenario's own driver, and the
    person who hands the rover over), where its start parks the rover (`choices.drift_of`)."""
    scenario = rollout_scenario(request.world, request.seed, driver=request.driver)
    scenario.world.park(drift_of(request.start, request.seed))
    human = request.controller == "human"
    controller: Controller[World] = (
        scenario.human
        if human
        else make_controller(
            request.controller, request.policy, start_named(request.start, scenario.human)
        )
    )
    trace = run_controller(scenario.world, controller, request.seconds, on_frame=on_frame)
    return rollout_metrics(trace, request.seed, taken_at(request.controller, request.start)), trace


@dataclass(frozen=True)
class Rollouts:
    """The rollouts of one drive on a rover world: every controller on every seed from every
    start (the policy and its baselines by default; without a policy, the baselines that need
    none). The human drives each seed once from rest, and once from a drifted start when one
    is asked: those rollouts are the starts' references (`hand_over.rollout_plan`)."""

    world: str
    seeds: Sequence[int]
    seconds: float
    policy: Callable[[], TickPolicy] | None = None
    controllers: Sequence[str] | None = None
    starts: Sequence[str] = (HAND_OVER,)
    driver: str = CONTINUOUS

    def names(self) -> Sequence[str]:
        if self.controllers is not None:
            return self.controllers
        return ("policy", *BASELINES) if self.policy is not None else ("human", "copycat")

    def requests(self) -> list[tuple[RolloutRequest, bool]]:
        """Every rollout (`hand_over.rollout_plan`), seed by seed, and whether it is of the
        first start."""
        return [
            (
                RolloutRequest(
                    self.world,
                    seed,
                    self.seconds,
                    plan.controller,
                    self.policy,
                    plan.start,
                    self.driver,
                ),
                plan.first,
            )
            for plan in rollout_plan(self.starts, self.names())
            for seed in self.seeds
        ]


def closed_loop_report(
    rollouts: Rollouts,
    *,
    on_rollout: Callable[[RolloutMetrics[NoOwnFigures], RolloutTrace], None] | None = None,
    video: Callable[[int], FrameSink | None] | None = None,
) -> DrivingReport:
    """The policy and its baselines (human model, copycat, blind policy) on the same seeds.
    `video(seed)` may return a frame sink for the policy's first rollout on that seed."""
    rows: list[RolloutMetrics[NoOwnFigures]] = []
    for request, first in rollouts.requests():
        filmed = video is not None and first and request.controller == "policy"
        metrics, trace = rollout(request, video(request.seed) if filmed and video else None)
        rows.append(metrics)
        if on_rollout is not None:
            on_rollout(metrics, trace)
    return report_of(
        rollouts.world,
        rollouts.seeds,
        rollouts.seconds,
        rollouts.names(),
        rows,
        DRIVING_ONLY,
        rollouts.starts,
    )


def report_of(
    world: str,
    seeds: Sequence[int],
    seconds: float,
    controllers: Sequence[str],
    rows: Sequence[RolloutMetrics[Row]],
    kind: FiguresKind[Row, Pool, Gap],
    driven: Sequence[str] = (HAND_OVER,),
) -> ClosedLoopReport[Row, Pool, Gap]:
    """Every controller's rollouts pooled per start `driven`, and the policy's margin over
    each other one; the human's rollouts from the start's reference place (`reference_start`:
    from rest, or drifted) are its reference. The report's own summaries and margins are the
    first start's in `choices.STARTS` order (the hand-over when it was driven)."""
    starts = {
        start: start_figures(
            [
                row
                for row in rows
                if row.start == (reference_start(start) if row.controller == "human" else start)
            ],
            controllers,
            kind,
        )
        for start in STARTS
        if start in driven
    }
    first = next(iter(starts.values()))
    return ClosedLoopReport(
        world, tuple(seeds), seconds, tuple(rows), first.summaries, first.margins, starts
    )


def start_figures(
    rows: Sequence[RolloutMetrics[Row]],
    controllers: Sequence[str],
    kind: FiguresKind[Row, Pool, Gap],
) -> StartFigures[Pool, Gap]:
    """One start's rollouts: each controller pooled, the policy's margin over each other."""
    summaries = {
        name: controller_summary([row for row in rows if row.controller == name], kind)
        for name in controllers
    }
    margins = {}
    if "policy" in summaries:
        margins = {
            name: margin(summaries["policy"], summary, kind)
            for name, summary in summaries.items()
            if name != "policy"
        }
    return StartFigures(summaries, margins)


__all__ = [
    "BASELINES",
    "DRIVING_ONLY",
    "NO_FIGURES",
    "AnyReport",
    "AnyRollout",
    "ClosedLoopReport",
    "ControllerSummary",
    "FiguresKind",
    "Margin",
    "OwnFigures",
    "RolloutMetrics",
    "RolloutRequest",
    "RolloutTrace",
    "Rollouts",
    "StartFigures",
    "closed_loop_report",
    "controller_summary",
    "report_of",
    "rollout",
    "rollout_metrics",
    "run_controller",
]
