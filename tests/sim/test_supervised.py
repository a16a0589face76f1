"""Supervised driving (`drive --supervised --record`): the envelope's conditions, the field
figures, the human model taking over and handing back, and the recordings it writes."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_checkpoints import driving_checkpoint

from rovertrain.contracts.command_schema import HUMAN, POLICY, initial_schema
from rovertrain.data.field import FieldFigures, pooled
from rovertrain.sim.choices import DRIFT_OFFSET, DRIFTED
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.field_drive import supervised_rollout
from rovertrain.sim.rollout import RolloutRequest, rollout
from rovertrain.sim.supervised import (
    CRAWL,
    OBSTACLE,
    OFFSET,
    STALL,
    Envelope,
    ProgressWindow,
    Seen,
    SupervisedDriver,
    breach,
    may_hand_back,
)
from rovertrain.sim.worlds import FIELD, rollout_scenario

ENVELOPE = Envelope()


@pytest.mark.parametrize(
    ("offset", "drift", "moving", "ahead", "rest_ms", "progress", "expected"),
    [
        (0.0, 0.0, True, None, 0.0, None, None),
        (1.05, 0.0, True, None, 0.0, None, OFFSET),
        (-1.05, 0.0, False, None, 0.0, None, OFFSET),
        (0.8, 0.8, True, None, 0.0, None, OFFSET),  # at 1.04 in 300 ms: the person sees it coming
        (0.8, 0.6, True, None, 0.0, None, None),
        (0.95, 0.0, True, None, 0.0, None, None),
        (1.05, -2.0, True, None, 0.0, None, OFFSET),  # off now, whatever it is about to do
        (0.0, 0.0, True, 2.0, 0.0, None, OBSTACLE),
        (0.0, 0.0, True, 3.0, 0.0, None, None),  # the person still expects the policy to stop
        (0.0, 0.0, False, 2.0, 9_000.0, None, None),  # at rest before an obstacle: waiting
        (0.0, 0.0, False, None, 8_000.0, None, STALL),
        (0.0, 0.0, False, 10.0, 8_000.0, None, STALL),  # the obstacle is far: nothing to wait for
        (0.0, 0.0, False, None, 7_900.0, None, None),  # a pause as long as a person's
        (0.0, 0.0, True, None, 0.0, 4.9, CRAWL),  # stop-go: 10 s, under 5 m
        (0.0, 0.0, False, None, 300.0, 2.0, CRAWL),
        (0.0, 0.0, True, None, 0.0, 5.0, None),
        (0.0, 0.0, True, None, 0.0, 22.0, None),  # cruising
        (0.0, 0.0, False, None, 8_000.0, 0.0, STALL),  # the first condition broken
    ],
)
def test_the_envelope_s_conditions(
    offset: float,
    drift: float,
    moving: bool,
    ahead: float | None,
    rest_ms: float,
    progress: float | None,
    expected: str | None,
) -> None:
    seen = Seen(offset, drift, moving, ahead, rest_ms, progress)
    assert breach(seen, ENVELOPE) == expected


def test_progress_is_measured_over_the_window_once_a_stretch_is_that_long() -> None:
    window = ProgressWindow(10_000.0)
    for t in range(0, 10_000, 10):  # 0.5 m/s, a creep
        window.note(float(t), t / 2_000.0)
    assert window.metres() is None  # 9.99 s: not yet a window
    window.note(10_000.0, 5.0)
    assert window.metres() == pytest.approx(5.0)
    for t in range(10_010, 15_000, 10):  # then at rest
        window.note(float(t), 5.0)
    # Over the last 10 s (from 4.99 s): the rest of the creep only.
    assert window.metres() == pytest.approx(5.0 - 4_990 / 2_000.0)
    window.restart()  # an obstacle close ahead: a new stretch
    window.note(15_000.0, 5.0)
    assert window.metres() is None


@given(st.lists(st.floats(0.0, 3.0), min_size=1, max_size=400))
def test_progress_is_the_way_driven_in_the_last_window(speeds: list[float]) -> None:
    window, s, positions = ProgressWindow(1_000.0), 0.0, []
    for tick, speed in enumerate(speeds):
        s += speed * 0.01
        positions.append(s)
        window.note(tick * 10.0, s)
    if len(speeds) <= 100:
        assert window.metres() is None
    else:
        assert window.metres() == pytest.approx(positions[-1] - positions[-101], abs=1e-9)


def test_the_person_hands_back_only_a_corrected_moving_rover_with_nothing_ahead() -> None:
    ok = {"offset": 0.1, "heading": 0.05, "moving": True, "obstacle_ahead": None}
    assert may_hand_back(**ok, control_ms=2_000.0, envelope=ENVELOPE)
    assert not may_hand_back(**ok, control_ms=1_990.0, envelope=ENVELOPE)
    for change in ({"offset": 0.4}, {"heading": -0.2}, {"moving": False}, {"obstacle_ahead": 9.0}):
        assert not may_hand_back(**{**ok, **change}, control_ms=5_000.0, envelope=ENVELOPE)


def test_field_figures() -> None:
    figures = FieldFigures(supervised_seconds=120.0, autonomous_seconds=90.0, take_overs=3)
    assert figures.policy_share == 0.75
    assert figures.take_overs_per_10_min == pytest.approx(20.0)
    assert figures.mean_seconds_between_take_overs == 30.0
    calm = FieldFigures(supervised_seconds=60.0, autonomous_seconds=60.0, take_overs=0)
    assert calm.take_overs_per_10_min == 0.0 and calm.mean_seconds_between_take_overs is None
    never = FieldFigures(supervised_seconds=60.0, autonomous_seconds=0.0, take_overs=1)
    assert never.take_overs_per_10_min is None and never.policy_share == 0.0


@given(
    st.lists(
        st.tuples(st.floats(0, 1e4), st.floats(0, 1), st.integers(0, 50)), min_size=1, max_size=8
    )
)
def test_pooled_figures_add_time_before_dividing(rows: list[tuple[float, float, int]]) -> None:
    figures = [FieldFigures(total, total * share, n, {OFFSET: n}) for total, share, n in rows]
    whole = pooled(figures)
    assert whole.take_overs == sum(n for _, _, n in rows)
    assert whole.reasons == {OFFSET: whole.take_overs}
    autonomous = sum(f.autonomous_seconds for f in figures)
    assert math.isclose(whole.autonomous_seconds, autonomous, abs_tol=1e-6)
    if autonomous > 0:
        expected = whole.take_overs * 600.0 / autonomous
        assert math.isclose(whole.take_overs_per_10_min or 0.0, expected, rel_tol=1e-9)


@dataclass
class Decision:
    values: dict[str, dict[str, float]]

    @property
    def send(self) -> dict[str, bool]:
        return {"stop": False, "drive": True}


@dataclass
class VeeringPolicy:
    """Drives on, steering right, every tick; engages and disengages as RoverPolicy does."""

    schema: list[Any] = field(default_factory=lambda: list(initial_schema()))
    tick_ms: int = 100
    engaged: bool = False
    take_overs: int = 0
    observed: list[tuple[float, str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.engaged, self.take_overs = False, 0

    def engage(self) -> None:
        self.engaged = True

    def observe_command(
        self, t_ms: float, command_type: str, values: Any = None, by: str = HUMAN
    ) -> bool:
        self.observed.append((t_ms, command_type, by))
        if by == HUMAN and self.engaged:
            self.engaged, self.take_overs = False, self.take_overs + 1
        return True

    def tick(self, frame: Any, t_ms: float) -> Decision:
        return Decision({"stop": {}, "drive": {"speed": 0.7, "turn": -0.6}})


def test_the_person_takes_over_a_veering_policy_and_hands_it_back() -> None:
    policy = VeeringPolicy()
    metrics, trace, log = supervised_rollout("road", 2, policy, 60.0, ENVELOPE)
    take_overs = log.take_overs
    assert len(take_overs) >= 3 and {event.reason for event in take_overs} == {OFFSET}
    # Take-over and hand-back alternate, beginning with a take-over.
    reasons = [event.reason for event in log.interventions]
    assert all((r is None) == (i % 2 == 1) for i, r in enumerate(reasons)), reasons
    assert policy.take_overs == len(take_overs)  # each began with a person's command
    # What the policy sent is marked, the person's is not; the policy heard both.
    by_sender = {command.by for command in trace.commands}
    assert by_sender == {HUMAN, POLICY}
    assert [c.by for c in trace.commands] == [by for _, _, by in policy.observed]
    for event in take_overs:  # the person's command lands at the take-over
        assert any(c.by == HUMAN and 0 <= c.t - event.t_ms < 10 for c in trace.commands)
    # The person keeps the rover near its lane; the policy alone leaves it for good.
    alone, _ = rollout(RolloutRequest("road", 2, 60.0, "policy", lambda: VeeringPolicy()))
    assert alone.in_lane_fraction < 0.3 < 0.85 < metrics.in_lane_fraction
    figures = metrics.own.figures
    assert figures.take_overs == len(take_overs)
    assert 0.1 < (figures.policy_share or 0) < 0.9
    # From the commands, as a job reads the recording: the window of the operator's opening
    # command is the person's, the policy's time starts with the next one.
    assert figures.supervised_seconds == pytest.approx(59.9)
    assert figures.reasons == {OFFSET: len(take_overs), OBSTACLE: 0, STALL: 0, CRAWL: 0}


def test_the_person_s_commands_of_one_step_are_observed_in_time_order() -> None:
    """A warning and a drive sent at the same step carry their own jitter; the runtime
    refuses a command time that goes backwards."""
    policy = VeeringPolicy()
    opening = SentCommand(0.0, "drive", {"speed": 0.5, "turn": 0.0})
    driver = SupervisedDriver(policy, rollout_scenario("warehouse", 1, FIELD).human, opening)
    same_step = [SentCommand(16363.2, "horn"), SentCommand(16361.1, "drive", {"speed": 0.5})]
    sent = driver.observed(same_step)
    assert [command.t for command in sent] == [16361.1, 16363.2]
    assert [t for t, _, _ in policy.observed] == [16361.1, 16363.2]


@pytest.mark.parametrize("seed", [2, 3])  # one side of the lane, then the other
def test_from_a_drifted_place_the_person_takes_over_at_once_and_drives_back(seed: int) -> None:
    policy = VeeringPolicy()
    metrics, trace, log = supervised_rollout("road", seed, policy, 20.0, ENVELOPE, start=DRIFTED)
    assert metrics.start == DRIFTED
    assert abs(trace.x[0]) == pytest.approx(DRIFT_OFFSET, abs=0.05)
    first = log.take_overs[0]
    assert first.reason == OFFSET and first.t_ms < 200.0  # outside the lane from the start
    # The person's commands bring it back, as a recording the next job learns from.
    assert metrics.back_in_lane_s is not None and metrics.back_in_lane_s < 5.0
    person = [c for c in trace.commands if c.by == HUMAN and c.t < 1000.0]
    assert person and all(c.values is not None for c in person if c.type == "drive")


@dataclass
class StutterDecision:
    go: bool
    values: dict[str, dict[str, float]] = field(
        default_factory=lambda: {"stop": {}, "drive": {"speed": 0.5, "turn": 0.0}}
    )

    @property
    def send(self) -> dict[str, bool]:
        return {"stop": not self.go, "drive": self.go}


@dataclass
class StutterPolicy(VeeringPolicy):
    """Stop-go on the centre line: drives one tick in five (0.2 m each, 4 m in 10 s)."""

    ticks: int = 0

    def tick(self, frame: Any, t_ms: float) -> StutterDecision:  # type: ignore[override]
        self.ticks += 1
        return StutterDecision(go=self.ticks % 5 == 0)


def test_the_person_takes_over_a_stop_go_policy_that_never_leaves_its_lane() -> None:
    policy = StutterPolicy()
    metrics, _, log = supervised_rollout("corridor", 1, policy, 30.0, ENVELOPE)
    crawls = [event for event in log.take_overs if event.reason == CRAWL]
    assert crawls, log.interventions
    # The first after 10 s of the policy's own driving (its first tick is at 0).
    assert ENVELOPE.crawl_ms <= crawls[0].t_ms < ENVELOPE.crawl_ms + 200.0
    assert metrics.own.figures.reasons is not None
    assert metrics.own.figures.reasons[CRAWL] == len(crawls)


def least_unobstructed_progress(world: str, seed: int, window_ms: float) -> float:
    """The human model's least way driven over any `window_ms` with nothing within
    REST_RANGE ahead, on field seed `seed` (60 s)."""
    from rovertrain.sim.rollout import run_controller
    from rovertrain.sim.world import within_rest_range
    from rovertrain.sim.worlds import FIELD, rollout_scenario

    scenario = rollout_scenario(world, seed, FIELD)
    ahead: list[float | None] = []
    trace = run_controller(
        scenario.world,
        scenario.human,
        60.0,
        after_move=lambda w: ahead.append(w.obstacle_distance()),
    )
    blocked = list(itertools.accumulate((within_rest_range(d) for d in ahead), initial=0))
    ticks = int(window_ms / 10)
    ways = [  # windows with no blocked tick (prefix sums of blocked ticks)
        trace.s[end] - trace.s[end - ticks]
        for end in range(ticks, len(trace.s))
        if blocked[end + 1] == blocked[end - ticks]
    ]
    return min(ways, default=math.inf)


@pytest.mark.parametrize("world", ["road", "warehouse", "corridor"])
def test_the_human_model_never_crawls(world: str) -> None:
    """The envelope's `crawl` line sits well below the person's own least progress."""
    least = min(least_unobstructed_progress(world, seed, ENVELOPE.crawl_ms) for seed in range(20))
    assert math.isfinite(least)
    assert least >= 1.4 * ENVELOPE.crawl_metres, least


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint that always drives on, straight ahead: it needs a person in every bend."""
    return driving_checkpoint(tmp_path_factory.mktemp("supervised") / "root", 78)


def test_drive_supervised_records_sessions_the_next_job_reads(
    cli, straight: Path, tmp_path: Path
) -> None:
    field_root = tmp_path / "field"
    args = ("drive", str(straight), "--supervised", "--record", str(field_root), "--seconds", "40")
    result = cli(*args, "--seed", "1", "--seed", "4")
    assert result.code == 0, result.stderr
    rollouts = result.of("rollout")
    assert [(e["controller"], e["seed"]) for e in rollouts] == [
        ("supervised", 1),
        ("supervised", 4),
    ]
    summary = result.last()
    recorded = summary["supervision"]["recorded"]
    assert recorded["root"] == str(field_root.resolve()) and len(recorded["sessions"]) == 2
    pooled_field = summary["controllers"]["supervised"]["field"]
    assert pooled_field["takeOvers"] == sum(e["field"]["takeOvers"] for e in rollouts) > 0
    for event, session in zip(rollouts, recorded["sessions"], strict=True):
        folder = field_root / "recordings" / session
        meta = json.loads((folder / "session.json").read_text())
        assert meta["drivenBy"] == {"model": str(uuid.UUID(int=78))}
        lines = [json.loads(line) for line in (folder / "commands.ndjson").read_text().splitlines()]
        assert {line.get("by", HUMAN) for line in lines} == {HUMAN, POLICY}
        # The next job's view of it: the policy's windows left out, each take-over counted.
        inspected = cli("inspect", str(field_root), session)
        assert inspected.code == 0, inspected.stderr
        diagnostics = inspected.of("dataset")[0]["diagnostics"]
        field_figures = event["field"]
        assert diagnostics["takeOvers"] == field_figures["takeOvers"]
        # One definition: what the drive reported is what the job reads from the recording.
        assert abs(diagnostics["autonomousWindows"] - field_figures["autonomousSeconds"] * 10) <= 1
        assert abs(diagnostics["supervisedWindows"] - field_figures["supervisedSeconds"] * 10) <= 1
    # A recording is never overwritten: the same model on the same seed is refused.
    again = cli(*args, "--seed", "4")
    assert again.code != 0 and "already recorded" in again.stderr + json.dumps(again.events)
    assert not list((field_root / "recordings").glob(".*"))  # nothing half-written left


def test_a_keyboard_person_supervises_with_the_pages_keys(
    cli, straight: Path, tmp_path: Path
) -> None:
    """`--driver keyboard`: the person who takes over drives through a keyboard page, as the
    recordings did: their commands carry the page's levels, the recording says so."""
    field_root = tmp_path / "field"
    result = cli(
        "drive", str(straight), "--supervised", "--record", str(field_root),
        "--seconds", "40", "--seed", "1", "--driver", "keyboard",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.of("rollout")[0]["field"]["takeOvers"] > 0
    (session,) = result.last()["supervision"]["recorded"]["sessions"]
    folder = field_root / "recordings" / session
    assert json.loads((folder / "session.json").read_text())["controlProfile"] == "keyboard"
    lines = [json.loads(line) for line in (folder / "commands.ndjson").read_text().splitlines()]
    person = [line for line in lines if line.get("by", HUMAN) == HUMAN and "values" in line]
    turns = {line["values"]["turn"] for line in person}
    speeds = {line["values"]["speed"] for line in person}
    # a page's keys: a fixed turn left or right or none, the cruise speed or none (a
    # gamepad's person sends dozens of distinct values in 40 s)
    assert person and len(turns) <= 3 and len(speeds) <= 2, (turns, speeds)
    assert turns == {-t for t in turns}


def test_record_needs_supervised(cli, straight: Path, tmp_path: Path) -> None:
    result = cli("drive", str(straight), "--record", str(tmp_path / "r"))
    assert result.code == 2 and "--supervised" in result.stderr


def test_a_supervised_drive_from_a_drifted_place(cli, straight: Path, tmp_path: Path) -> None:
    result = cli(
        "drive", str(straight), "--supervised", "--start", "drifted", "--seconds", "10",
        "--seed", "1", "--record", str(tmp_path / "field"),
    )  # fmt: skip
    assert result.code == 0, result.stderr
    (rollout_event,) = result.of("rollout")
    assert rollout_event["start"] == "drifted"
    assert rollout_event["backInLaneSeconds"] is not None
    assert set(result.last()["starts"]) == {"drifted"}
    for starts in (("--start", "rest"), ("--start", "handOver", "--start", "drifted")):
        refused = cli("drive", str(straight), "--supervised", *starts)
        assert refused.code == 2 and "one --start of handOver, drifted" in refused.stderr


FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip


def test_the_next_model_says_how_the_one_before_drove(
    cli, straight: Path, synth_copy: Path
) -> None:
    """A supervised round: the drives are recorded into the data root, the next job trains on
    everything, and its model.json pools the field figures per model that drove."""
    drove = cli(
        "drive", str(straight), "--supervised", "--record", str(synth_copy),
        "--seconds", "30", "--seeds", "2",
    )  # fmt: skip
    assert drove.code == 0, drove.stderr
    figures = drove.last()["controllers"]["supervised"]["field"]
    recorded = drove.last()["supervision"]["recorded"]["sessions"]
    # A drive the policy did alone from the first window (a rover's recorder started after
    # the hand-over): nothing to imitate, but 30 clean seconds of field evidence.
    alone = synth_copy / "recordings" / f"{recorded[0]}-alone"
    shutil.copytree(synth_copy / "recordings" / recorded[0], alone)
    meta = json.loads((alone / "session.json").read_text())
    (alone / "session.json").write_text(json.dumps({**meta, "sessionId": alone.name}))
    lines = [json.loads(line) for line in (alone / "commands.ndjson").read_text().splitlines()]
    (alone / "commands.ndjson").write_text(
        "".join(json.dumps({**line, "by": "policy"}) + "\n" for line in lines)
    )
    job = json.loads((synth_copy / "job.json").read_text())
    job["sessions"] += [*recorded, alone.name]
    job["config"].update(FAST)
    (synth_copy / "job-round.json").write_text(json.dumps(job))
    result = cli("run", "--job", str(synth_copy / "job-round.json"))
    assert result.code == 0, result.stderr
    published = result.last()["published"]["id"]
    model = json.loads(
        (synth_copy / "training" / "checkpoints" / published / "model.json").read_text()
    )
    field_figures = model["field"][str(uuid.UUID(int=78))]
    assert field_figures["takeOvers"] == figures["takeOvers"] > 0
    assert [e["sessionId"] for e in result.of("skipped")] == [alone.name]  # no_windows
    # The drive's figures, plus the 30 s the policy drove alone.
    assert abs(field_figures["autonomousSeconds"] - figures["autonomousSeconds"] - 30) < 1.0
    assert abs(field_figures["supervisedSeconds"] - figures["supervisedSeconds"] - 30) < 1.0
    assert set(model["field"]) == {str(uuid.UUID(int=78))}  # the person's drives are not field


@pytest.mark.parametrize(
    ("driven_by", "model"),
    [
        ({"model": "m-1"}, "m-1"),
        (None, None),
        ("m-1", None),
        ({"model": 3}, None),
        ({"model": ""}, None),
        ({"model": "x" * 10_000}, None),
        ({"other": "m-1"}, None),
    ],
)
def test_driven_by_is_informational_and_hostile_values_read_as_not_said(
    driven_by: object, model: str | None
) -> None:
    from rovertrain.data.recording import driving_model

    assert driving_model(driven_by) == model


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_node_recorder_marks_what_the_policy_sent(cli, synth_copy: Path) -> None:
    """examples/supervisor/record.js: a teleop server's recording of a supervised drive (a
    person to 8 s, the policy to 20 s, then a person again) reads as one take-over."""
    source = sorted((synth_copy / "recordings").iterdir())[0]
    meta = json.loads((source / "session.json").read_text())
    lines = [json.loads(line) for line in (source / "commands.ndjson").read_text().splitlines()]
    for line in lines:
        if 8_000 <= line["t"] < 20_000:
            line["by"] = "policy"
    script = Path(__file__).parents[2] / "examples" / "supervisor" / "record.js"
    video = source / meta["video"]["file"]
    completed = subprocess.run(
        ["node", str(script), str(synth_copy), "node-field-0001", str(video), "model-7"],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    folder = Path(json.loads(completed.stdout)["recorded"])
    assert folder == synth_copy / "recordings" / "node-field-0001"
    assert json.loads((folder / "session.json").read_text())["drivenBy"] == {"model": "model-7"}
    written = [json.loads(line) for line in (folder / "commands.ndjson").read_text().splitlines()]
    assert written == lines and sum("by" in line for line in written) > 0
    inspected = cli("inspect", str(synth_copy), "node-field-0001")
    assert inspected.code == 0, inspected.stderr
    diagnostics = inspected.of("dataset")[0]["diagnostics"]
    assert diagnostics["takeOvers"] == 1 and 100 < diagnostics["autonomousWindows"] <= 120
