"""`rovertrain export`: a verified checkpoint in, a verified ONNX folder for the rover out.

The checkpoint's files are checked (size and sha256, as the catalogue does) and the weights
are loaded from the bytes that were checked. The whole `Policy` module is exported (input:
uint8 NCHW images and float32 states, normalisation inside the graph; dynamic batch), then
torch and onnxruntime are compared on synthetic held-out-like windows; only when they agree
is the folder staged (`.<name>.pending`), fsync'd and renamed into place without replacing
anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rovertrain import __version__
from rovertrain.contracts.errors import RovertrainError
from rovertrain.job.config import DEFAULT_STEERING_DEADBAND
from rovertrain.runtime.policy import (
    FORMAT,
    IMAGE_INPUT,
    MANIFEST_FILE,
    MODEL_FILE,
    RUNTIME_FILE,
    STATE_INPUT,
)
from rovertrain.store.catalogue import verify_checkpoint
from rovertrain.store.durable import disk_error, fsync_directory, rename_no_replace, write_durably
from rovertrain.store.layout import WEIGHTS_FILE

OPSET = 18
PARITY_WINDOWS = 320
PARITY_TOLERANCE = 1e-4
HELD_OUT_WINDOWS = 1024
DEFAULT_THRESHOLD = 0.5


def load_checkpoint(directory: Path) -> tuple[dict[str, Any], bytes]:
    """(model.json, weights bytes), refusing a checkpoint whose files do not verify."""
    if not directory.is_dir():
        raise RovertrainError("not_found", f"No checkpoint folder at {directory}.")
    meta, problems = verify_checkpoint(directory)
    weights = b""
    if not problems:
        weights = (directory / WEIGHTS_FILE).read_bytes()
        record = meta["files"].get(WEIGHTS_FILE) or {}
        if hashlib.sha256(weights).hexdigest() != record.get("sha256"):
            problems.append(f"{WEIGHTS_FILE} sha256 mismatch")
    if problems:
        raise RovertrainError(
            "invalid_checkpoint",
            f"Checkpoint {directory.name} does not verify; nothing was exported.",
            "; ".join(problems),
        )
    return meta, weights


def decision_rules(
    meta: dict[str, Any], threshold: float | None = None, steering_deadband: float | None = None
) -> tuple[float, float]:
    """(threshold, steering deadband): the given ones, else the job's from model.json, else
    the defaults (checkpoints written before `steeringDeadband` existed get today's)."""
    if threshold is None:
        threshold = float(meta.get("actionThreshold", DEFAULT_THRESHOLD))
    if steering_deadband is None:
        steering_deadband = float(meta.get("steeringDeadband", DEFAULT_STEERING_DEADBAND))
    return threshold, steering_deadband


def runtime_specification(
    meta: dict[str, Any], threshold: float, steering_deadband: float
) -> dict[str, Any]:
    spec = dict(meta["specification"])
    schema = spec["schema"]
    return {
        "format": FORMAT,
        **spec,
        "threshold": threshold,
        "steeringDeadband": steering_deadband,
        "valueNames": {slot["type"]: list(slot["values"]) for slot in schema},
        "roles": {slot["type"]: slot["role"] for slot in schema},
        "onnx": {
            "opset": OPSET,
            "inputs": {
                IMAGE_INPUT: {"dtype": "uint8", "shape": ["batch", 3, 72, 96]},
                STATE_INPUT: {
                    "dtype": "float32",
                    "shape": ["batch", spec["input"]["state"]["size"]],
                },
            },
            "outputs": {
                "eventLogits": {"shape": ["batch", spec["slots"]], "then": "sigmoid"},
                "values": {"shape": ["batch", spec["slots"], spec["valuesPerSlot"]]},
            },
            "normalisation": "inside the graph: (uint8 / 255 - mean) / std",
        },
        "model": {
            "id": meta.get("id"),
            "name": meta.get("name"),
            "createdAt": meta.get("createdAt"),
        },
    }


def export_onnx(model: Any) -> bytes:
    """The whole Policy as ONNX: uint8 images and float32 states in, logits and values out."""
    import torch

    from rovertrain.contracts.command_schema import SLOTS
    from rovertrain.contracts.observation import (
        OBS_CHANNELS,
        OBS_HEIGHT,
        OBS_WIDTH,
        STATE_FEATURES_PER_SLOT,
    )

    images = torch.zeros(2, OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH, dtype=torch.uint8)
    states = torch.zeros(2, SLOTS * STATE_FEATURES_PER_SLOT)
    batch = torch.export.Dim("batch", min=1, max=65536)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            model,
            (images, states),
            None,
            input_names=[IMAGE_INPUT, STATE_INPUT],
            output_names=["eventLogits", "values"],
            opset_version=OPSET,
            dynamo=True,
            dynamic_shapes={"images": {0: batch}, "states": {0: batch}},
            verbose=False,
        )
    assert program is not None
    program.optimize()
    data: bytes = program.model_proto.SerializeToString()
    return data


def parity(model: Any, onnx_bytes: bytes, frames: np.ndarray, states: np.ndarray) -> dict[str, Any]:
    """Max abs differences (probabilities, values) between torch and onnxruntime."""
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    worst_p = worst_v = 0.0
    for start in range(0, len(frames), 64):
        images = np.ascontiguousarray(frames[start : start + 64].transpose(0, 3, 1, 2))
        state = np.ascontiguousarray(states[start : start + 64])
        logits, values = session.run(None, {IMAGE_INPUT: images, STATE_INPUT: state})
        with torch.inference_mode():
            t_logits, t_values = model(torch.from_numpy(images), torch.from_numpy(state))
        p_onnx = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        p_torch = torch.sigmoid(t_logits.double()).numpy()
        worst_p = max(worst_p, float(np.abs(p_onnx - p_torch).max()))
        worst_v = max(worst_v, float(np.abs(values - t_values.numpy()).max()))
    return {
        "windows": len(frames),
        "maxAbsDiffProbability": worst_p,
        "maxAbsDiffValues": worst_v,
        "tolerance": PARITY_TOLERANCE,
        "batchSizes": sorted({min(64, len(frames) - start) for start in range(0, len(frames), 64)}),
    }


def require_deploy_packages() -> None:
    """The `rovertrain[deploy]` packages, or a `missing_dependency` error that says so."""
    missing = []
    for name in ("onnx", "onnxscript", "onnxruntime"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise RovertrainError(
            "missing_dependency",
            f"export needs {', '.join(missing)}: pip install 'rovertrain[deploy]'.",
        )


def export_checkpoint(
    checkpoint: str, out: str, threshold: float | None, steering_deadband: float | None = None
) -> dict[str, Any]:
    """Export and publish; returns the `exported` event's fields."""
    started = time.monotonic()
    require_deploy_packages()
    import torch
    from safetensors.torch import load as load_safetensors

    from rovertrain.deploy.windows import held_out_windows, noise_windows, synthetic_windows
    from rovertrain.learn.policy import VERSION, Policy

    directory = Path(checkpoint).resolve()
    target = Path(out).resolve()
    if target.exists() or target.is_symlink():
        raise RovertrainError("publish_conflict", f"{target} already exists; nothing replaced.")
    meta, weights = load_checkpoint(directory)
    spec = meta.get("specification") or {}
    if spec.get("version") != VERSION:
        raise RovertrainError(
            "invalid_checkpoint",
            f"Checkpoint {directory.name} has policy version {spec.get('version')}; "
            f"this rovertrain exports version {VERSION}.",
        )
    threshold, steering_deadband = decision_rules(meta, threshold, steering_deadband)
    model = Policy()
    model.load_state_dict(load_safetensors(weights), strict=True)
    model.eval()
    onnx_bytes = export_onnx(model)
    real_frames, real_states = held_out_windows(directory, meta, HELD_OUT_WINDOWS)
    drive_frames, drive_states = synthetic_windows(
        spec["schema"], max(0, PARITY_WINDOWS - 64 - len(real_frames))
    )
    noise_frames, noise_states = noise_windows(64, real_states.shape[1])
    check = parity(
        model,
        onnx_bytes,
        np.concatenate([real_frames, drive_frames, noise_frames]),
        np.concatenate([real_states, drive_states, noise_states]),
    )
    check["sources"] = {
        "heldOut": len(real_frames),
        "simulated": len(drive_frames),
        "random": len(noise_frames),
    }
    if not check["maxAbsDiffProbability"] <= PARITY_TOLERANCE:
        raise RovertrainError(
            "export_mismatch",
            "onnxruntime and torch disagree on the exported model; nothing was written.",
            json.dumps(check),
        )
    runtime = runtime_specification(meta, threshold, steering_deadband)
    runtime_bytes = json.dumps(runtime, indent=2, allow_nan=False).encode() + b"\n"
    files = {
        name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in ((MODEL_FILE, onnx_bytes), (RUNTIME_FILE, runtime_bytes))
    }
    manifest = {
        "format": FORMAT,
        "files": files,
        "parity": check,
        "opset": OPSET,
        "source": {
            "id": meta.get("id"),
            "name": meta.get("name"),
            "modelJsonSha256": hashlib.sha256((directory / "model.json").read_bytes()).hexdigest(),
        },
        "exportedAt": int(time.time() * 1000),
        "rovertrainVersion": __version__,
        "torchVersion": str(torch.__version__),
    }
    publish_folder(target, {MODEL_FILE: onnx_bytes, RUNTIME_FILE: runtime_bytes}, manifest)
    return {
        "id": meta.get("id"),
        "name": meta.get("name"),
        "path": str(target),
        "files": files,
        "parity": check,
        "opset": OPSET,
        "threshold": threshold,
        "steeringDeadband": steering_deadband,
        "elapsedSeconds": round(time.monotonic() - started, 3),
    }


def publish_folder(target: Path, contents: dict[str, bytes], manifest: dict[str, Any]) -> None:
    """Stage next to `target`, fsync, rename without replacing; the manifest is written last."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.pending")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
        for name, data in contents.items():
            write_durably(staging / name, data)
        text = json.dumps(manifest, indent=2, allow_nan=False).encode() + b"\n"
        write_durably(staging / MANIFEST_FILE, text)
        fsync_directory(staging)
        rename_no_replace(staging, target)
        fsync_directory(target.parent)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, FileExistsError) or error.errno in (17, 39):
            raise RovertrainError(
                "publish_conflict", f"{target} already exists; nothing replaced.", str(error)
            ) from None
        raise disk_error(error, "exported model") from None
