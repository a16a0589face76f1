"""`rovertrain export` and the runtime on an exported folder: parity with torch and training."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from blocked_imports import BLOCKER
from conftest import REPO, cli_env, parse_events, run_cli
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.decision import DecisionRules
from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.observation import OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH
from rovertrain.contracts.runtime_spec import (
    FORMAT,
    FORMATS,
    LEVELS_FORMAT,
    SUPERSEDED_FORMAT,
    RuntimeSpec,
)
from rovertrain.data.recording import Command, load_recording, read_command_log
from rovertrain.data.window_set import model_pictures
from rovertrain.data.windows import label_windows
from rovertrain.learn.policy import Policy, specification
from rovertrain.store.publish import publish_checkpoint
from rovertrain.video.decode import decode_to_file
from rovertrain.video.decode_protocol import DecodeLimits

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from rovertrain.deploy.stream import tick_frames
from rovertrain.runtime import RoverPolicy
from rovertrain.runtime.policy import PolicyFileError

LIMITS = DecodeLimits(max_bytes=1 << 32, max_pixels=1 << 26, max_seconds=7200, threads=1)


def make_checkpoint(root: Path, seed: int = 0) -> tuple[Path, Policy]:
    torch.manual_seed(seed)
    model = Policy().eval()
    with torch.no_grad():  # a trained-looking spread of probabilities, not all near 0.5
        model.events.bias.uniform_(-2.0, 2.0)
    model_id = str(uuid.UUID(int=seed + 1))
    metadata = {
        "name": f"test-model-{seed}",
        "createdAt": 1,
        "specification": specification(initial_schema()),
        "actionThreshold": 0.4,
        "steeringDeadband": 0.3,
        "promote": True,
    }
    publish_checkpoint(root, model_id, dict(model.state_dict()), metadata)
    return root / "training" / "checkpoints" / model_id, model


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("export") / "root"
    checkpoint, model = make_checkpoint(root)
    out = root.parent / "deploy"
    # The job's deadband (model.json) is overridden on the command line, and a checkpoint
    # from before startThreshold is given the start rule.
    options = ["--steering-deadband", "0.2", "--start-threshold", "0"]
    result = run_cli("export", str(checkpoint), "--out", str(out), *options)
    assert result.code == 0, result.stderr
    return {"root": root, "checkpoint": checkpoint, "model": model, "out": out, "result": result}


def test_export_writes_a_verified_folder(exported: dict[str, Any]) -> None:
    import onnx

    event = exported["result"].last()
    assert exported["result"].kinds() == ["exported"]
    out: Path = exported["out"]
    assert sorted(path.name for path in out.iterdir()) == [
        "manifest.json", "model.onnx", "runtime.json",
    ]  # fmt: skip
    assert not list(out.parent.glob(".*.pending"))
    assert event["parity"]["windows"] >= 256
    assert event["parity"]["maxAbsDiffProbability"] <= 1e-4
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parity"] == event["parity"]
    assert manifest["files"] == event["files"]
    runtime = json.loads((out / "runtime.json").read_text())
    assert runtime["threshold"] == 0.4 == event["threshold"]
    assert runtime["steeringDeadband"] == 0.2 == event["steeringDeadband"]
    assert RoverPolicy.load(out).steering_deadband == 0.2
    assert runtime["startThreshold"] == 0.0 == event["startThreshold"]
    assert RoverPolicy.load(out).start_threshold == 0.0
    # From before keepPressedAbove: every release of a key is sent, as the model ran then.
    assert runtime["keepPressedAbove"] == 1.0 == event["keepPressedAbove"]
    assert RoverPolicy.load(out).keep_pressed_above == 1.0
    assert runtime["valueNames"] == {"stop": [], "drive": ["speed", "turn"]}
    assert runtime["roles"] == {"stop": "stop", "drive": "movement"}
    assert runtime["model"] == {"id": event["id"], "name": "test-model-0", "createdAt": 1}
    described = json.loads(json.dumps(specification(initial_schema())))
    assert {key: runtime[key] for key in described} == described  # as model.json holds it
    model = onnx.load(str(out / "model.onnx"))
    assert (
        max(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")) >= 17
    )
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param and not batch.dim_value  # dynamic batch


def test_a_tampered_checkpoint_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    checkpoint, _ = make_checkpoint(tmp_path / "root", seed=3)
    weights = checkpoint / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01
    weights.write_bytes(bytes(data))
    out = tmp_path / "deploy"
    result = run_cli("export", str(checkpoint), "--out", str(out))
    assert result.code == 1
    assert result.last()["kind"] == "error" and result.last()["code"] == "invalid_checkpoint"
    assert "sha256" in result.last()["detail"]
    assert not out.exists() and not list(tmp_path.glob(".*"))


def test_an_existing_target_is_never_replaced(exported: dict[str, Any]) -> None:
    before = {path.name: path.read_bytes() for path in exported["out"].iterdir()}
    result = run_cli("export", str(exported["checkpoint"]), "--out", str(exported["out"]))
    assert result.code == 1 and result.last()["code"] == "publish_conflict"
    assert {path.name: path.read_bytes() for path in exported["out"].iterdir()} == before


def test_the_runtime_refuses_an_altered_folder(exported: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(exported["out"], copy)
    RoverPolicy.load(copy)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01
    (copy / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(PolicyFileError, match="sha256"):
        RoverPolicy.load(copy)
    (copy / "model.onnx").unlink()
    with pytest.raises(PolicyFileError, match="missing"):
        RoverPolicy.load(copy)


def test_tick_refuses_bad_input(exported: dict[str, Any]) -> None:
    policy = RoverPolicy.load(exported["out"])
    frame = np.zeros((48, 64, 3), dtype=np.uint8)
    with pytest.raises(TypeError):
        policy.tick(frame.astype(np.float32), 0)
    with pytest.raises(ValueError):
        policy.tick(frame[:, :, :2], 0)
    policy.tick(frame, 100)
    with pytest.raises(ValueError, match="backwards"):
        policy.tick(frame, 0)
    with pytest.raises(ValueError, match="finite"):
        policy.observe_command(200, "drive", {"speed": float("nan")})
    assert policy.observe_command(200, "launch", {}) is False
    assert policy.unknown_commands == 1
    decision = policy.tick(frame, 300)
    assert set(decision.fire) == {"stop", "drive"}
    assert set(decision.values["drive"]) == {"speed", "turn"}
    assert decision.values["stop"] == {}
    assert decision.fire["drive"] == (decision.probability["drive"] >= 0.4)


def stream_session(policy: RoverPolicy, root: Path, session_id: str) -> dict[str, np.ndarray]:
    """A recording through the runtime, tick by tick, with every command fed as it is sent."""
    recording = load_recording(root, session_id)
    commands = read_command_log(recording).commands
    ticks, images, states, probabilities = [], [], [], []
    position = 0
    policy.reset()
    for item in tick_frames(recording.video_path, recording.video_offset_ms, LIMITS):
        while position < len(commands) and commands[position].t < item.tick:
            command = commands[position]
            policy.observe_command(command.t, command.type, dict(command.values))
            position += 1
        policy.rotation = item.rotation
        decision = policy.tick(item.rgb, item.tick)
        ticks.append(item.tick)
        images.append(decision.image[0].transpose(1, 2, 0))
        states.append(decision.state[0])
        probabilities.append([decision.probability[t] for t in policy.types])
    return {
        "ticks": np.asarray(ticks),
        "images": np.stack(images),
        "states": np.stack(states),
        "probabilities": np.asarray(probabilities),
    }


def training_windows(root: Path, session_id: str, tmp_path: Path) -> dict[str, Any]:
    recording = load_recording(root, session_id)
    sink = tmp_path / f"{session_id}.frames"
    with open(sink, "wb") as stream:
        result = decode_to_file(recording.video_path, recording.video_offset_ms, LIMITS, stream)
    frames = np.fromfile(sink, dtype=np.uint8).reshape(-1, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)
    ticks = np.asarray(result.ticks, dtype=np.int64)
    labels = label_windows(ticks, read_command_log(recording).commands, initial_schema())
    return {"ticks": ticks, "frames": frames, "states": labels.states}


def test_streaming_a_recording_matches_training_and_torch(
    exported: dict[str, Any], synth_data: Path, tmp_path: Path
) -> None:
    policy = RoverPolicy.load(exported["out"])
    model: Policy = exported["model"]
    sessions = sorted(path.name for path in (synth_data / "recordings").iterdir())[:2]
    for session_id in sessions:
        streamed = stream_session(policy, synth_data, session_id)
        windows = training_windows(synth_data, session_id, tmp_path)
        np.testing.assert_array_equal(streamed["ticks"], windows["ticks"])
        # Each tick's frame, then the previous tick's: what training stacks from the cache.
        pictures = model_pictures(windows["frames"], np.arange(len(windows["frames"])))
        np.testing.assert_array_equal(streamed["images"], pictures)
        np.testing.assert_array_equal(streamed["states"], windows["states"])
        with torch.inference_mode():
            logits, _ = model(
                torch.from_numpy(np.ascontiguousarray(pictures)).permute(0, 3, 1, 2),
                torch.from_numpy(windows["states"]),
            )
        expected = torch.sigmoid(logits).numpy()[:, :2]
        assert np.abs(streamed["probabilities"] - expected).max() <= 1e-4


CORPUS = Path(__file__).resolve().parents[3] / "shared" / "media-corpus"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no shared media corpus")
@pytest.mark.parametrize(
    "name", ["h264_rotated_buck_bunny.mp4", "h264_cursed_vfr_3026x1386.mp4", "av1_video.mkv"]
)
def test_real_videos_stream_to_the_training_frames(
    name: str, exported: dict[str, Any], tmp_path: Path
) -> None:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{name} not in the corpus")
    sink = tmp_path / "frames"
    with open(sink, "wb") as stream:
        result = decode_to_file(path, 0.0, LIMITS, stream)
    frames = np.fromfile(sink, dtype=np.uint8).reshape(-1, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)
    limit = min(len(frames), 100)
    ticks = np.asarray(result.ticks[:limit], dtype=np.int64)
    # A command stream on the video's clock, so the states are not all "never sent".
    commands = [{"t": float(t) - 37.0, "type": "drive", "values": {"speed": 0.5, "turn": -0.25}}
                for t in ticks[::3]]  # fmt: skip
    states = label_windows(
        ticks, [Command(c["t"], c["type"], c["values"]) for c in commands], initial_schema()
    ).states
    policy = RoverPolicy.load(exported["out"])
    images, streamed_states, probabilities, position = [], [], [], 0
    for item in tick_frames(path, 0.0, LIMITS):
        if len(images) == limit:
            break
        while position < len(commands) and commands[position]["t"] < item.tick:
            command = commands[position]
            policy.observe_command(command["t"], command["type"], command["values"])
            position += 1
        policy.rotation = item.rotation
        decision = policy.tick(item.rgb, item.tick)
        assert item.tick == ticks[len(images)]
        images.append(decision.image[0].transpose(1, 2, 0))
        streamed_states.append(decision.state[0])
        probabilities.append([decision.probability[t] for t in policy.types])
    pictures = model_pictures(frames[:limit], np.arange(limit))
    np.testing.assert_array_equal(np.stack(images), pictures)
    np.testing.assert_array_equal(np.stack(streamed_states), states)
    with torch.inference_mode():
        logits, _ = exported["model"](
            torch.from_numpy(np.ascontiguousarray(pictures)).permute(0, 3, 1, 2),
            torch.from_numpy(states),
        )
    expected = torch.sigmoid(logits).numpy()[:, :2]
    assert np.abs(np.asarray(probabilities) - expected).max() <= 1e-4


def test_the_runtime_runs_with_torch_av_and_click_blocked(exported: dict[str, Any]) -> None:
    code = BLOCKER + (
        "import numpy as np\n"
        "from rovertrain.runtime import RoverPolicy\n"
        f"policy = RoverPolicy.load({str(exported['out'])!r})\n"
        "policy.observe_command(50, 'drive', {'speed': 0.6, 'turn': -0.2})\n"
        "decision = policy.tick(np.zeros((480, 640, 3), np.uint8), 100)\n"
        "assert set(decision.probability) == {'stop', 'drive'}\n"
        "assert not {'torch', 'av', 'click'} & set(sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_replay_of_an_exported_model_writes_the_timeline_and_overlay(
    exported: dict[str, Any], synth_data: Path, tmp_path: Path
) -> None:
    import av

    session_id = sorted(path.name for path in (synth_data / "recordings").iterdir())[0]
    out = tmp_path / "replay"
    result = run_cli("replay", str(exported["out"]), str(synth_data), session_id, "--out", str(out))
    assert result.code == 0, result.stderr
    summary = result.last()
    assert summary["kind"] == "replayed" and summary["model"]["engine"] == "onnxruntime"
    assert summary["blind"] is False and set(summary["types"]) == {"stop", "drive"}
    assert summary["stops"]["onsets"] >= 0
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with av.open(str(out / "overlay.mp4")) as container:
        frames = sum(1 for _ in container.decode(video=0))
    assert frames == summary["ticks"] == len(result.of("prediction"))
    blind = run_cli("replay", str(exported["out"]), str(synth_data), session_id, "--blind")
    assert blind.code == 0, blind.stderr
    camera = blind.last()["camera"]
    assert camera["sightedF1"] == summary["overall"]["f1"]
    assert camera["f1FromCamera"] == camera["sightedF1"] - camera["blindF1"]
    # A blind replay sees only grey pictures.
    first = blind.of("prediction")[0]["types"]["drive"]["probability"]
    assert first != result.of("prediction")[0]["types"]["drive"]["probability"]


def test_export_without_the_deploy_extra_says_what_to_install(tmp_path: Path) -> None:
    checkpoint, _ = make_checkpoint(tmp_path / "root", seed=7)
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'onnxscript':\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from rovertrain.cli import main\n"
        f"sys.argv = ['rovertrain', 'export', {str(checkpoint)!r}, '--out', {str(tmp_path / 'out')!r}]\n"
        "main()\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=cli_env(), timeout=120
    )
    (event,) = parse_events(completed.stdout)
    assert completed.returncode == 1 and event["code"] == "missing_dependency"
    assert "rovertrain[deploy]" in event["message"] and not (tmp_path / "out").exists()


def test_decision_rules_come_from_the_command_line_then_model_json() -> None:
    from rovertrain.deploy.export import decision_rules

    meta = {"actionThreshold": 0.4, "steeringDeadband": 0.3}  # from before startThreshold
    assert decision_rules(meta) == DecisionRules(0.4, 0.3, 1.0, 1.0)
    given = {"actionThreshold": 0.6, "steeringDeadband": 0.1, "startThreshold": 0.0}
    assert decision_rules(meta, given) == DecisionRules(0.6, 0.1, 0.0, 1.0)
    assert decision_rules(meta, {"steeringDeadband": 0.0}) == DecisionRules(0.4, 0.0, 1.0, 1.0)
    assert decision_rules(meta, {"startThreshold": None}) == DecisionRules(0.4, 0.3, 1.0, 1.0)
    assert decision_rules({**meta, "startThreshold": 0.2}).startThreshold == 0.2
    assert decision_rules(meta, {"keepPressedAbove": 0.5}).keepPressedAbove == 0.5
    assert decision_rules(meta, {"actionThreshold": 0.0}).actionThreshold == 0  # `--threshold` 0
    with pytest.raises(RovertrainError, match=r"model\.json's steeringDeadband: must be at most 2"):
        decision_rules({"steeringDeadband": 2.5})


def test_export_has_one_option_per_decision_knob_with_the_bounds_a_record_may_hold() -> None:
    import click

    from rovertrain.cli.main import export
    from rovertrain.contracts.settings import knobs

    options = {p.name: p for p in export.params if isinstance(p, click.Option)}
    declared = knobs(DecisionRules)
    assert set(options) == {"out"} | {field.name for field in declared}
    assert options["actionThreshold"].opts == ["--threshold"]  # runtime.json's name
    assert options["startThreshold"].opts == ["--start-threshold"]
    assert options["keepPressedAbove"].opts == ["--keep-pressed-above"]
    for field in declared:
        kind = options[field.name].type
        assert isinstance(kind, click.FloatRange)
        bounds = (kind.min, kind.max, kind.min_open, kind.max_open)
        assert bounds == (field.spec.minimum, field.spec.maximum, False, False)


@pytest.mark.parametrize("runtime_format", FORMATS)
def test_a_record_without_a_knob_runs_as_it_was_trained_at_export_and_in_the_runtime(
    runtime_format: str,
) -> None:
    """One value for a knob a record lacks, the value it ran with: model.json and runtime.json
    of every format written before steeringDeadband existed steer with 0 (the event head
    alone), as they did; a job file without it gets the default."""
    from rovertrain.deploy.export import decision_rules, runtime_specification

    policy = copy.deepcopy(specification(initial_schema()))
    if runtime_format == LEVELS_FORMAT:  # expected levels, as models of version 6 give them
        policy["output"]["values"]["levels"] = {"drive": {"turn": [-1.0, 0.0, 1.0]}}
        policy["output"]["values"]["levelOutput"] = "expected"
    if runtime_format not in (SUPERSEDED_FORMAT, LEVELS_FORMAT):  # as before version 4
        del policy["input"]["state"]["superseded"]
    if runtime_format == FORMAT:  # one picture, as models before version 2 had it
        del policy["input"]["image"]["frameHistory"]
    at_export = decision_rules({"specification": policy})
    runtime = RuntimeSpec.from_json({"format": runtime_format, **policy, "threshold": 0.5})
    assert (
        at_export == runtime.decision == DecisionRules(0.5, 0, startThreshold=1, keepPressedAbove=1)
    )
    written = runtime_specification({"specification": policy}, at_export).to_json()
    assert written["format"] == runtime_format
    assert written["steeringDeadband"] == 0.0 and written["threshold"] == 0.5
    assert written["startThreshold"] == 1.0  # a parked rover starts from the event head alone
    assert written["keepPressedAbove"] == 1.0  # every release of a key is sent
    assert DecisionRules().steeringDeadband == 0.1  # what a new job gets


RUNTIME_DRIVE = """
import json, sys
import numpy as np
from rovertrain.runtime import RoverPolicy
for name in ("torch", "av", "click", "rich", "safetensors"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"{name} is importable in the rover's venv")
policy = RoverPolicy.load(sys.argv[1])
rng = np.random.default_rng(3)
out = []
for tick in range(1, 21):
    if tick % 5 == 1:
        policy.observe_command(tick * 100 - 50, "drive", {"speed": 0.6, "turn": 0.1 * tick - 1})
    frame = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    decision = policy.tick(frame, tick * 100)
    out.append({"p": decision.probability, "v": decision.values, "send": decision.send})
print(json.dumps({"ticks": out, "rovertrain": sys.modules["rovertrain.runtime"].__file__}))
"""


def build_runtime_wheel(tmp_path: Path) -> Path:
    """The rover's wheel, built from a copy of the sources (nothing written to the checkout)."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "build")
    shutil.copytree(REPO / "packages" / "rovertrain-runtime", source / "packages" / "runtime")
    for package in ("runtime", "contracts"):
        shutil.copytree(
            REPO / "src" / "rovertrain" / package,
            source / "src" / "rovertrain" / package,
            ignore=ignore,
        )
    dist = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*command, "-w", str(dist), str(source / "packages" / "runtime")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("rovertrain_runtime-*.whl")
    return wheel


def rover_venv(tmp_path: Path, wheel: Path) -> Path:
    """A venv holding the wheel, numpy and onnxruntime (with what onnxruntime imports): no
    torch, PyAV, click or rich, and not the checkout."""
    venv = tmp_path / "rover"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    subprocess.run([*install, "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    ours = Path(sysconfig.get_paths()["purelib"])
    deps = tmp_path / "rover-deps"
    deps.mkdir()
    for name in ("numpy", "numpy.libs", "onnxruntime", "flatbuffers", "packaging", "google"):
        if (ours / name).exists():
            (deps / name).symlink_to(ours / name)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "rover-deps.pth").write_text(f"{deps}\n")
    return venv


def test_the_runtime_wheel_drives_an_exported_policy_without_torch_av_or_click(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    import zipfile

    wheel = build_runtime_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
    packages = {name.split("/")[1] for name in names if name.startswith("rovertrain/")}
    assert packages == {"runtime", "contracts"}, names
    assert "rovertrain/__init__.py" not in names  # `rovertrain` owns it
    assert sorted(requires) == ["numpy>=1.26", "onnxruntime>=1.20"]

    venv = rover_venv(tmp_path, wheel)
    completed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", RUNTIME_DRIVE, str(exported["out"])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)
    assert result["rovertrain"].startswith(str(venv)), result["rovertrain"]
    # The same ticks through this checkout's runtime decide the same.
    policy = RoverPolicy.load(exported["out"])
    rng = np.random.default_rng(3)
    for tick, seen in enumerate(result["ticks"], start=1):
        if tick % 5 == 1:
            policy.observe_command(tick * 100 - 50, "drive", {"speed": 0.6, "turn": 0.1 * tick - 1})
        decision = policy.tick(rng.integers(0, 256, (480, 640, 3), dtype=np.uint8), tick * 100)
        assert seen["send"] == decision.send
        for kind, p in decision.probability.items():
            assert abs(seen["p"][kind] - p) < 1e-6


def test_export_says_nothing_about_torchvision(exported: dict[str, Any]) -> None:
    """The exporter's notice that torchvision is missing (operators the policy never uses)
    is not shown; the export's own line is."""
    stderr = exported["result"].stderr
    assert "torchvision" not in stderr
    assert "exported" in stderr
