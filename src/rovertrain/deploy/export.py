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
import logging
import shutil
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rovertrain import __version__
from rovertrain.contracts.command_schema import Schema
from rovertrain.contracts.decision import DecisionRules, RecordedRulesError, recorded_rules
from rovertrain.contracts.errors import RovertrainError, require_packages
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.contracts.runtime_spec import (
    FORMAT,
    IMAGE_INPUT,
    MANIFEST_FILE,
    MODEL_FILE,
    OPSET,
    RUNTIME_FILE,
    STATE_INPUT,
    ModelIdentity,
    PolicySpec,
    RuntimeSpec,
    RuntimeSpecError,
)
from rovertrain.store.catalogue import verify_checkpoint
from rovertrain.store.durable import disk_error, fsync_directory, rename_no_replace, write_durably
from rovertrain.store.layout import WEIGHTS_FILE

if TYPE_CHECKING:
    from rovertrain.learn.policy import Policy

PARITY_WINDOWS = 320
PARITY_TOLERANCE = 1e-4
PARITY_BATCH = 64
HELD_OUT_WINDOWS = 1024

ModelJson = Mapping[str, JsonValue]
"""A checkpoint's model.json, verified (store.catalogue)."""


def load_checkpoint(directory: Path) -> tuple[ModelJson, bytes]:
    """(model.json, weights bytes), refusing a checkpoint whose files do not verify."""
    if not directory.is_dir():
        raise RovertrainError("not_found", f"No checkpoint folder at {directory}.")
    meta, problems = verify_checkpoint(directory)
    weights = b""
    if not problems:
        weights = (directory / WEIGHTS_FILE).read_bytes()
        files = meta.get("files")
        record = files.get(WEIGHTS_FILE) if isinstance(files, dict) else None
        expected = record.get("sha256") if isinstance(record, dict) else None
        if hashlib.sha256(weights).hexdigest() != expected:
            problems.append(f"{WEIGHTS_FILE} sha256 mismatch")
    if problems:
        raise RovertrainError(
            "invalid_checkpoint",
            f"Checkpoint {directory.name} does not verify; nothing was exported.",
            "; ".join(problems),
        )
    return meta, weights


def decision_rules(
    meta: ModelJson, given: Mapping[str, float | None] | None = None
) -> DecisionRules:
    """The rules `given` by knob name (`export`'s options; None: not given), else the job's
    from model.json; a checkpoint written before a knob existed gets what it ran with then
    (`contracts.decision`)."""
    try:
        recorded = recorded_rules(meta)
    except RecordedRulesError as error:
        raise RovertrainError("invalid_checkpoint", f"model.json's {error}") from None
    return recorded.overridden(**(given or {}))


def runtime_specification(meta: ModelJson, decision: DecisionRules) -> RuntimeSpec:
    """The runtime.json record of a verified checkpoint with these decision rules."""
    policy = meta.get("specification")
    if not isinstance(policy, dict):
        raise RovertrainError("invalid_checkpoint", "model.json has no policy specification")
    try:
        return RuntimeSpec(PolicySpec.from_json(policy), decision, ModelIdentity.from_json(meta))
    except RuntimeSpecError as error:
        raise RovertrainError(
            "invalid_checkpoint", "model.json's policy specification cannot be run", str(error)
        ) from None


TORCHVISION_NOTICES = "torch.onnx._internal.exporter._registration"
"""The exporter's logger that warns, once per operator, that torchvision is not installed:
rovertrain's policy uses none of torchvision's operators, so the notice is only noise."""


@contextlib.contextmanager
def _quieter(name: str, level: int) -> Iterator[None]:
    """The logger `name` shows only records of `level` and above while inside."""
    logger = logging.getLogger(name)
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def export_onnx(model: Policy) -> bytes:
    """The whole Policy as ONNX: uint8 images and float32 states in, logits and values out."""
    import torch

    from rovertrain.contracts.command_schema import SLOTS
    from rovertrain.contracts.observation import (
        MODEL_CHANNELS,
        OBS_HEIGHT,
        OBS_WIDTH,
        STATE_FEATURES_PER_SLOT,
    )

    images = torch.zeros(2, MODEL_CHANNELS, OBS_HEIGHT, OBS_WIDTH, dtype=torch.uint8)
    states = torch.zeros(2, SLOTS * STATE_FEATURES_PER_SLOT)
    batch = torch.export.Dim("batch", min=1, max=65536)
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        _quieter(TORCHVISION_NOTICES, logging.ERROR),
    ):
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


@dataclass(frozen=True)
class ParityCheck:
    """torch against onnxruntime on the same windows: the largest differences seen."""

    windows: int
    max_abs_diff_probability: float
    max_abs_diff_values: float
    batch_sizes: list[int]
    held_out: int
    simulated: int
    random: int

    @property
    def agrees(self) -> bool:
        return self.max_abs_diff_probability <= PARITY_TOLERANCE

    def to_json(self) -> JsonObject:
        return {
            "windows": self.windows,
            "maxAbsDiffProbability": self.max_abs_diff_probability,
            "maxAbsDiffValues": self.max_abs_diff_values,
            "tolerance": PARITY_TOLERANCE,
            "batchSizes": list(self.batch_sizes),
            "sources": {
                "heldOut": self.held_out,
                "simulated": self.simulated,
                "random": self.random,
            },
        }


def max_differences(
    model: Policy, onnx_bytes: bytes, frames: np.ndarray, states: np.ndarray
) -> tuple[float, float]:
    """Max abs differences (probabilities, values) between torch and onnxruntime."""
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    worst_p = worst_v = 0.0
    for start in range(0, len(frames), PARITY_BATCH):
        batch = slice(start, start + PARITY_BATCH)
        images = np.ascontiguousarray(frames[batch].transpose(0, 3, 1, 2))
        state = np.ascontiguousarray(states[batch])
        logits, values = session.run(None, {IMAGE_INPUT: images, STATE_INPUT: state})
        with torch.inference_mode():
            t_logits, t_values = model(torch.from_numpy(images), torch.from_numpy(state))
        p_onnx = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        p_torch = torch.sigmoid(t_logits.double()).numpy()
        worst_p = max(worst_p, float(np.abs(p_onnx - p_torch).max()))
        worst_v = max(worst_v, float(np.abs(values - t_values.numpy()).max()))
    return worst_p, worst_v


def check_parity(
    model: Policy, onnx_bytes: bytes, directory: Path, meta: ModelJson, schema: Schema
) -> ParityCheck:
    """Compare on held-out windows of the checkpoint's sessions, simulated drives and noise."""
    from rovertrain.deploy.parity_windows import held_out_windows, noise_windows, synthetic_windows

    real_frames, real_states = held_out_windows(directory, meta, HELD_OUT_WINDOWS)
    simulated = max(0, PARITY_WINDOWS - PARITY_BATCH - len(real_frames))
    drive_frames, drive_states = synthetic_windows(schema, simulated)
    noise_frames, noise_states = noise_windows(PARITY_BATCH, real_states.shape[1])
    frames = np.concatenate([real_frames, drive_frames, noise_frames])
    worst_p, worst_v = max_differences(
        model, onnx_bytes, frames, np.concatenate([real_states, drive_states, noise_states])
    )
    count = len(frames)
    return ParityCheck(
        windows=count,
        max_abs_diff_probability=worst_p,
        max_abs_diff_values=worst_v,
        batch_sizes=sorted({min(PARITY_BATCH, count - at) for at in range(0, count, PARITY_BATCH)}),
        held_out=len(real_frames),
        simulated=len(drive_frames),
        random=len(noise_frames),
    )


def require_deploy_packages() -> None:
    """The `rovertrain[deploy]` packages, or a `missing_dependency` error that says so."""
    require_packages(("onnx", "onnxscript", "onnxruntime"), "export", "deploy")


def export_checkpoint(
    checkpoint: str,
    out: str,
    rules: Mapping[str, float | None] | None = None,
) -> JsonObject:
    """Export and publish; returns the `exported` event's fields."""
    started = time.monotonic()
    require_deploy_packages()
    # 1. Nothing is replaced: refuse an existing target before any work.
    directory, target = Path(checkpoint).resolve(), Path(out).resolve()
    if target.exists() or target.is_symlink():
        raise RovertrainError("publish_conflict", f"{target} already exists; nothing replaced.")
    # 2. The checkpoint verifies and holds a policy this rovertrain exports.
    meta, weights = load_checkpoint(directory)
    model = policy_from_checkpoint(directory, meta, weights)
    spec = runtime_specification(meta, decision_rules(meta, rules))
    # 3. The graph, and proof that it computes what torch computes.
    onnx_bytes = export_onnx(model)
    check = check_parity(model, onnx_bytes, directory, meta, spec.schema)
    if not check.agrees:
        raise RovertrainError(
            "export_mismatch",
            "onnxruntime and torch disagree on the exported model; nothing was written.",
            json.dumps(check.to_json()),
        )
    # 4. Publish: staged, fsync'd, renamed into place; the manifest lists every file.
    runtime_bytes = json.dumps(spec.to_json(), indent=2, allow_nan=False).encode() + b"\n"
    contents = {MODEL_FILE: onnx_bytes, RUNTIME_FILE: runtime_bytes}
    files: JsonObject = {
        name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in contents.items()
    }
    publish_folder(target, contents, export_manifest(directory, meta, files, check))
    return {
        "id": meta.get("id"),
        "name": meta.get("name"),
        "path": str(target),
        "files": files,
        "parity": check.to_json(),
        "opset": OPSET,
        **spec.decision.runtime_json(),
        "elapsedSeconds": round(time.monotonic() - started, 3),
    }


def policy_from_checkpoint(directory: Path, meta: ModelJson, weights: bytes) -> Policy:
    """The checkpoint's weights in a `Policy`, refusing another policy version."""
    from safetensors.torch import load as load_safetensors

    from rovertrain.learn.policy import VERSION, Policy

    policy = meta.get("specification")
    version = policy.get("version") if isinstance(policy, dict) else None
    if version != VERSION:
        raise RovertrainError(
            "invalid_checkpoint",
            f"Checkpoint {directory.name} has policy version {version}; "
            f"this rovertrain exports version {VERSION}.",
        )
    model = Policy()
    model.load_state_dict(load_safetensors(weights), strict=True)
    model.eval()
    return model


def export_manifest(
    directory: Path, meta: ModelJson, files: JsonObject, check: ParityCheck
) -> JsonObject:
    import torch

    model_json = (directory / "model.json").read_bytes()
    return {
        "format": FORMAT,
        "files": files,
        "parity": check.to_json(),
        "opset": OPSET,
        "source": {
            "id": meta.get("id"),
            "name": meta.get("name"),
            "modelJsonSha256": hashlib.sha256(model_json).hexdigest(),
        },
        "exportedAt": int(time.time() * 1000),
        "rovertrainVersion": __version__,
        "torchVersion": str(torch.__version__),
    }


def publish_folder(target: Path, contents: Mapping[str, bytes], manifest: JsonObject) -> None:
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
