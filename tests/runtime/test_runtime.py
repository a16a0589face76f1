"""The rover-side runtime's shared pieces: state at a tick and frame to model input."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blocked_imports import BLOCKER
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.observation import OBS_HEIGHT, OBS_WIDTH
from rovertrain.contracts.runtime_spec import (
    ImageInput,
    PolicyInput,
    RuntimeSpec,
    RuntimeSpecError,
    StateInput,
)
from rovertrain.data.recording import Command
from rovertrain.data.windows import label_windows
from rovertrain.runtime.frames import prepare_frame
from rovertrain.runtime.state import StateTracker

SCHEMA = [*initial_schema(), {"type": "horn", "values": ["a", "b", "c"], "role": "other"}]
TYPES = ["stop", "drive", "horn", "unknown"]
NAMES = ["speed", "turn", "a", "b", "c", "z"]

commands_strategy = st.lists(
    st.tuples(
        st.integers(-300, 6000).map(lambda t: t / 2),  # half-ms steps: many exact-tick times
        st.sampled_from(TYPES),
        st.dictionaries(
            st.sampled_from(NAMES), st.floats(-3, 3, allow_nan=False, width=32), max_size=4
        ),
    ),
    max_size=60,
)


def stream_states(commands: list[Command], ticks: np.ndarray) -> np.ndarray:
    """States as the rover builds them: commands fed as they happen, one tick at a time."""
    tracker = StateTracker(SCHEMA)
    rows, position = [], 0
    for tick in ticks:
        # On the rover, a command at exactly the tick may arrive before the tick is computed.
        while position < len(commands) and commands[position].t <= tick:
            command = commands[position]
            tracker.observe(command.t, command.type, command.values)
            position += 1
        rows.append(tracker.state_at(float(tick)))
    return np.stack(rows)


@settings(max_examples=150, deadline=None)
@given(commands_strategy, st.integers(-5, 5), st.integers(1, 40))
def test_tracker_and_labeller_agree(raw, first_tick: int, count: int) -> None:
    commands = sorted(
        (Command(t, kind, values) for t, kind, values in raw), key=lambda command: command.t
    )
    ticks = np.arange(first_tick, first_tick + count, dtype=np.int64) * 100
    batch = label_windows(ticks, commands, SCHEMA).states
    streamed = stream_states(commands, ticks)
    assert streamed.dtype == batch.dtype == np.float32
    np.testing.assert_array_equal(streamed, batch)


def test_tracker_counts_unknown_types_and_refuses_time_going_backwards() -> None:
    tracker = StateTracker(SCHEMA)
    assert tracker.observe(10, "drive", {"speed": 0.5}) is True
    assert tracker.observe(20, "launch", {}) is False
    assert tracker.unknown_commands == 1
    with pytest.raises(ValueError, match="backwards"):
        tracker.observe(5, "drive", {})
    tracker.state_at(100)
    with pytest.raises(ValueError, match="backwards"):
        tracker.state_at(0)
    with pytest.raises(ValueError, match="finite"):
        tracker.observe(float("nan"), "drive", {})
    tracker.reset()
    state = tracker.state_at(0).reshape(8, -1)
    assert state[:, 4].tolist() == [1.0] * 8  # neverSent everywhere after a reset


def test_prepare_frame_shape_values_and_rotation() -> None:
    rng = np.random.default_rng(0)
    for shape in [(480, 640, 3), (1080, 1920, 3), (48, 64, 3), (72, 96, 3), (1, 1, 3)]:
        frame = rng.integers(0, 256, shape, dtype=np.uint8)
        result = prepare_frame(frame)
        assert result.shape == (OBS_HEIGHT, OBS_WIDTH, 3) and result.dtype == np.uint8
        assert result.flags.c_contiguous
    flat = np.full((480, 640, 3), 77, dtype=np.uint8)
    assert (prepare_frame(flat) == 77).all()
    same = rng.integers(0, 256, (72, 96, 3), dtype=np.uint8)
    np.testing.assert_array_equal(prepare_frame(same), same)  # already the model's size
    tall = rng.integers(0, 256, (640, 480, 3), dtype=np.uint8)
    np.testing.assert_array_equal(
        prepare_frame(tall, 90), prepare_frame(np.ascontiguousarray(np.rot90(tall)))
    )
    # Area average: a 2×2 block of 0 and 255 pixels becomes their rounded mean.
    checker = np.zeros((144, 192, 3), dtype=np.uint8)
    checker[::2, ::2] = 255
    assert (prepare_frame(checker) == 64).all()


@pytest.mark.parametrize(
    ("frame", "error"),
    [
        (np.zeros((48, 64, 3), dtype=np.float32), TypeError),
        (np.zeros((48, 64), dtype=np.uint8), ValueError),
        (np.zeros((48, 64, 4), dtype=np.uint8), ValueError),
        (np.zeros((0, 64, 3), dtype=np.uint8), ValueError),
        ([[0, 0, 0]], TypeError),
    ],
)
def test_prepare_frame_refuses_bad_frames(frame, error) -> None:
    with pytest.raises(error):
        prepare_frame(frame)


def test_runtime_imports_without_torch_av_or_click() -> None:
    code = BLOCKER + (
        "import numpy as np\n"
        "from rovertrain.runtime import RoverPolicy, Decision\n"
        "from rovertrain.runtime.frames import prepare_frame\n"
        "from rovertrain.runtime.state import StateTracker\n"
        "prepare_frame(np.zeros((480, 640, 3), np.uint8))\n"
        "assert not {'torch', 'av', 'click'} & set(sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_a_policy_built_for_another_input_layout_is_refused() -> None:
    from rovertrain.runtime.policy import PolicyFileError, RoverPolicy

    spec: dict[str, Any] = {
        "schema": initial_schema(),
        "threshold": 0.5,
        "input": {"tickMs": 100, "state": {"size": 100}, "image": {"width": 96, "height": 72}},
        "slots": 8,
        "valuesPerSlot": 4,
    }
    with pytest.raises(PolicyFileError, match="state size"):
        RoverPolicy(None, RuntimeSpec.from_json(spec))
    spec["input"]["state"]["size"] = 136
    assert RoverPolicy(None, RuntimeSpec.from_json(spec)).types == ["stop", "drive"]


IMAGE = {"width": 96, "height": 72}
GOOD_DOCUMENT: dict[str, Any] = {
    "format": "rovertrain-runtime/1",
    "version": 3,
    "input": {"tickMs": 100, "state": {"size": 136}, "image": IMAGE},
    "slots": 8,
    "valuesPerSlot": 4,
    "schema": initial_schema(),
    "threshold": 0.4,
    "steeringDeadband": 0.1,
}


def test_a_runtime_specification_round_trips_and_refuses_what_it_cannot_run() -> None:
    document = dict(GOOD_DOCUMENT)
    spec = RuntimeSpec.from_json(document)
    assert (spec.decision.actionThreshold, spec.decision.steeringDeadband) == (0.4, 0.1)
    assert spec.policy.input == PolicyInput(ImageInput(96, 72, 1), StateInput(136, False), 100)
    assert spec.roles == {"stop": "stop", "drive": "movement"}
    written = spec.to_json()
    assert RuntimeSpec.from_json(written) == spec
    assert written["onnx"]["inputs"]["images"]["shape"] == ["batch", 3, 72, 96]
    assert written["valueNames"] == {"stop": [], "drive": ["speed", "turn"]}
    assert RuntimeSpec.from_json({**document, "threshold": 0}).decision.actionThreshold == 0
    for broken, message in (
        ({**document, "threshold": 1.5}, "threshold"),
        ({**document, "threshold": "0.5"}, "threshold"),
        ({**document, "steeringDeadband": -0.1}, "steeringDeadband"),
        ({**document, "schema": [{"type": 1}]}, "schema"),
        ({**document, "format": "other/1"}, "format"),
        ([], "object"),
    ):
        with pytest.raises(RuntimeSpecError, match=message):
            RuntimeSpec.from_json(broken)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"input": None}, "input must be an object, got None"),
        ({"input": {"tickMs": 100, "image": IMAGE}}, "input.state must be an object, got None"),
        ({"input": {"tickMs": 100, "state": {}, "image": IMAGE}}, "input.state.size must be a whole number, got None"),
        ({"input": {"tickMs": 100, "state": {"size": 136.5}, "image": IMAGE}}, "input.state.size must be a whole number, got 136.5"),
        ({"input": {"tickMs": 0, "state": {"size": 136}, "image": IMAGE}}, "input.tickMs must be at least 1, got 0"),
        ({"input": {"tickMs": "100", "state": {"size": 136}, "image": IMAGE}}, "input.tickMs must be a whole number, got '100'"),
        ({"input": {"tickMs": 100, "state": {"size": 136}, "image": {"width": 96}}}, "input.image.height must be a whole number, got None"),
        ({"input": {"tickMs": 100, "state": {"size": 136}, "image": {**IMAGE, "frameHistory": True}}}, "input.image.frameHistory must be a whole number, got True"),
        ({"slots": None}, "slots must be a whole number, got None"),
        ({"valuesPerSlot": -1}, "valuesPerSlot must be at least 0, got -1"),
    ],
)  # fmt: skip
def test_a_malformed_policy_part_is_refused_at_load_naming_the_field(
    policy: dict[str, Any], message: str
) -> None:
    """The policy part is validated once, when the folder is loaded, not at the first tick."""
    from rovertrain.runtime.policy import PolicyFileError, RoverPolicy

    with pytest.raises(RuntimeSpecError) as refused:
        RuntimeSpec.from_json({**GOOD_DOCUMENT, **policy})
    assert str(refused.value) == message
    with pytest.raises(PolicyFileError, match=f"^runtime.json: {re.escape(message)}$"):
        RoverPolicy(None, {**GOOD_DOCUMENT, **policy})


class RecordingSession:
    """An InferenceSession that keeps the image inputs it was given."""

    def __init__(self) -> None:
        self.images: list[np.ndarray] = []

    def run(self, names: Any, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.images.append(feed["images"].copy())
        return [np.zeros((1, 8), np.float32), np.zeros((1, 8, 4), np.float32)]


def test_the_image_input_stacks_the_previous_ticks_frame_when_it_was_one_tick_ago() -> None:
    from rovertrain.runtime.policy import RoverPolicy

    image = {"width": 96, "height": 72, "frameHistory": 2}
    spec = RuntimeSpec.from_json(
        {
            "schema": initial_schema(),
            "threshold": 0.5,
            "input": {"tickMs": 100, "state": {"size": 136}, "image": image},
            "slots": 8,
            "valuesPerSlot": 4,
        }
    )
    assert spec.policy.input.image.frame_history == 2
    assert spec.to_json()["onnx"]["inputs"]["images"]["shape"] == ["batch", 6, 72, 96]
    session = RecordingSession()
    policy = RoverPolicy(session, spec)
    frames = [np.full((OBS_HEIGHT, OBS_WIDTH, 3), level, np.uint8) for level in (10, 20, 30)]
    policy.tick(frames[0], 0.0)  # the first tick: no earlier frame, its own twice
    policy.tick(frames[1], 100.0)  # one tick later: the previous one behind it
    policy.tick(frames[2], 300.0)  # a tick was missed: no motion shown rather than a jump
    seen = [(int(i[0, 0, 0, 0]), int(i[0, 3, 0, 0])) for i in session.images]
    assert [i.shape for i in session.images] == [(1, 6, OBS_HEIGHT, OBS_WIDTH)] * 3
    assert seen == [(10, 10), (20, 10), (30, 30)]
    # A rover's clock: ticks about 100 ms apart, never exactly.
    policy.tick(frames[0], 1733412.18)
    policy.tick(frames[1], 1733512.43)
    policy.tick(frames[2], 1733612.37)
    assert [(int(i[0, 0, 0, 0]), int(i[0, 3, 0, 0])) for i in session.images[3:]] == [
        (10, 10), (20, 10), (30, 20)
    ]  # fmt: skip
    assert spec.to_json()["format"] == "rovertrain-runtime/2"  # old runtimes refuse it at load
    policy.reset()
    policy.tick(frames[1], 1733712.0)  # a new drive forgets the last frame
    assert (int(session.images[-1][0, 0, 0, 0]), int(session.images[-1][0, 3, 0, 0])) == (20, 20)
    with pytest.raises(Exception, match="stacks 3 frames"):
        RoverPolicy(session, RuntimeSpec.from_json({**spec.to_json(), "input": {
            "tickMs": 100, "state": {"size": 136}, "image": {**image, "frameHistory": 3}}}))  # fmt: skip


def test_supervised_driving_a_persons_command_takes_the_rover_back() -> None:
    from rovertrain.runtime.policy import RoverPolicy

    schema = [*initial_schema(), {"type": "horn", "values": [], "role": "other"}]
    spec = RuntimeSpec.from_json(
        {
            "schema": schema,
            "threshold": 0.5,
            "input": {"tickMs": 100, "state": {"size": 136}, "image": {"width": 96, "height": 72}},
            "slots": 8,
            "valuesPerSlot": 4,
        }
    )
    policy = RoverPolicy(RecordingSession(), spec)
    assert not policy.engaged and policy.take_overs == 0
    policy.observe_command(0.0, "drive", {"speed": 0.5, "turn": 0.0})  # the person drives
    assert not policy.engaged and policy.take_overs == 0
    policy.engage()
    policy.observe_command(100.0, "drive", {"speed": 0.6, "turn": 0.1}, by="policy")
    policy.observe_command(150.0, "horn", by="human")  # not a take-over: it drives nothing
    assert policy.engaged
    policy.observe_command(200.0, "stop", by="human")  # the person stops the rover
    assert not policy.engaged and policy.take_overs == 1
    with pytest.raises(ValueError, match="by must be one of"):
        policy.observe_command(300.0, "drive", {"speed": 0.1}, by="robot")
    policy.engage()
    policy.reset()
    assert not policy.engaged and policy.take_overs == 0
