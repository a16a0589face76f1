"""The README's rover loop and `replay` decide alike on every tick of a recording, and the model
sees the pictures training learned from.

The rover loop is the README's (section "Use the model", step 3), fed a recorded session:
its camera is a plain PyAV decode of the session's video (what a camera pipeline gives: every
picture decoded in full, the newest one at or before each tick), its commands are the person's
as the log has them, sent before each tick; the person drives, so the policy's decisions are
not sent. `replay` of the same export on the same session must emit the same decision for every
tick, bit for bit, and training's tick frames (`decode_to_file`, which leaves out the H.264
pictures no tick shows) must be the pictures the rover's model was given.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from conftest import run_cli
from rovertrain.contracts.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH, TICK_MS
from rovertrain.data.recording import Recording, load_recording, read_command_log
from rovertrain.data.window_set import model_pictures
from rovertrain.video.decode import decode_to_file
from rovertrain.video.decode_protocol import DecodeLimits

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from test_export import make_checkpoint

from rovertrain.runtime import RoverPolicy
from rovertrain.runtime.policy import Decision

LIMITS = DecodeLimits(max_bytes=1 << 32, max_pixels=1 << 26, max_seconds=7200, threads=2)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("loop") / "root"
    checkpoint, _ = make_checkpoint(root, seed=11)
    out = root.parent / "policy"
    result = run_cli("export", str(checkpoint), "--out", str(out))
    assert result.code == 0, result.stderr
    return out


def camera_frames(recording: Recording) -> Iterator[tuple[float, np.ndarray]]:
    """(time on the command clock in ms, RGB picture) of every frame, decoded plainly."""
    with av.open(str(recording.video_path)) as container:
        for frame in container.decode(video=0):
            assert frame.time is not None
            time_ms = frame.time * 1000.0 + recording.video_offset_ms
            yield time_ms, frame.to_ndarray(format="rgb24")


def rover_loop(out: Path, recording: Recording) -> list[Decision]:
    """The README's loop, once per 100 ms of the recording: the person's commands sent before
    the tick, then the camera's newest picture at or before it."""
    commands = read_command_log(recording).commands
    policy = RoverPolicy.load(out)
    frames = list(camera_frames(recording))
    assert all(a[0] < b[0] for a, b in itertools.pairwise(frames))
    decisions, sent, newest = [], 0, 0
    t_ms = math.ceil(frames[0][0] / TICK_MS) * TICK_MS
    while t_ms <= frames[-1][0]:
        while sent < len(commands) and commands[sent].t < t_ms:
            command = commands[sent]
            policy.observe_command(command.t, command.type, command.values, by=command.by)
            sent += 1
        while newest + 1 < len(frames) and frames[newest + 1][0] <= t_ms:
            newest += 1
        decisions.append(policy.tick(frames[newest][1], t_ms))
        t_ms += TICK_MS
    return decisions


def as_h264_default_preset(root: Path, session_id: str, target: Path) -> Path:
    """A copy of the session whose video is re-encoded with x264's default preset (deblocking
    and B-frames, as phones and dashcams record): the loop filter matters, and training leaves
    out the B-frames no tick shows."""
    source = root / "recordings" / session_id
    copy = target / "recordings" / session_id
    shutil.copytree(source, copy)
    document = json.loads((copy / "session.json").read_text())
    video = copy / document["video"]["file"]
    with av.open(str(video)) as reading, av.open(str(copy / "camera.mp4"), "w") as writing:
        decoded = reading.streams.video[0]
        stream = writing.add_stream("libx264", rate=decoded.average_rate)
        stream.width, stream.height, stream.pix_fmt = decoded.width, decoded.height, "yuv420p"
        stream.time_base = decoded.time_base
        for frame in reading.decode(decoded):
            picture = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), format="rgb24")
            picture.pts, picture.time_base = frame.pts, frame.time_base
            writing.mux(stream.encode(picture))
        writing.mux(stream.encode())
    video.unlink()
    document["video"]["file"] = "camera.mp4"
    (copy / "session.json").write_text(json.dumps(document))
    return target


def assert_same_decisions(decisions: list[Decision], predictions: list[dict[str, Any]]) -> None:
    assert [event["t"] for event in predictions] == [decision.t_ms for decision in decisions]
    for decision, event in zip(decisions, predictions, strict=True):
        for kind, replayed in event["types"].items():
            assert replayed["probability"] == decision.probability[kind], (event["t"], kind)
            assert replayed["fire"] == decision.fire[kind], (event["t"], kind)
            assert replayed["steer"] == decision.steer[kind], (event["t"], kind)
            assert replayed["values"] == decision.values[kind], (event["t"], kind)


def training_pictures(recording: Recording, scratch: Path) -> tuple[list[int], np.ndarray]:
    """The job's tick frames of the session, stacked as training stacks them."""
    sink = scratch / f"{recording.session_id}.frames"
    with open(sink, "wb") as stream:
        result = decode_to_file(recording.video_path, recording.video_offset_ms, LIMITS, stream)
    frames = np.fromfile(sink, dtype=np.uint8).reshape(-1, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)
    return result.ticks, model_pictures(frames, np.arange(len(frames)))


@pytest.mark.parametrize("video", ["vp8", "h264-default-preset"])
def test_the_rover_loop_and_replay_decide_alike_on_every_tick(
    video: str, exported: Path, synth_data: Path, tmp_path: Path
) -> None:
    session_id = sorted(path.name for path in (synth_data / "recordings").iterdir())[0]
    root = synth_data
    if video != "vp8":
        root = as_h264_default_preset(synth_data, session_id, tmp_path / "root")
    recording = load_recording(root, session_id)

    decisions = rover_loop(exported, recording)
    replay = run_cli("replay", str(exported), str(root), session_id)
    assert replay.code == 0, replay.stderr
    predictions = replay.of("prediction")
    assert len(predictions) == len(decisions) > 100
    assert_same_decisions(decisions, predictions)
    # Not one decision everywhere: the pictures move the model.
    assert len({decision.probability["drive"] for decision in decisions}) > len(decisions) // 2

    ticks, pictures = training_pictures(recording, tmp_path)
    assert ticks == [decision.t_ms for decision in decisions]
    seen = np.stack([decision.image[0].transpose(1, 2, 0) for decision in decisions])
    np.testing.assert_array_equal(seen, pictures)
