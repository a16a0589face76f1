"""Stage and publish an immutable checkpoint: a catalogue reader sees all of it or none.

`checkpoints/.<id>.pending/` gets `weights.safetensors` (no pickle on the rover side) and
`model.json` last; files and folder are fsync'd, then the folder is renamed to
`checkpoints/<id>` with RENAME_NOREPLACE (an existing target, even an empty folder or a link,
is an error), and the parent is fsync'd. Published versions are never overwritten or deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors.torch import save as safetensors_bytes

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.store.durable import disk_error, fsync_directory, rename_no_replace, write_durably
from rovertrain.store.layout import METADATA_FILE, WEIGHTS_FILE, Layout, is_staging

ADJECTIVES = ("amber", "curious", "gentle", "quiet", "silver", "bright", "merry", "sleepy")
ANIMALS = ("otter", "finch", "badger", "robin", "fox", "heron", "marten", "wren")


def remove_stale_staging(root: Path) -> list[str]:
    """Remove `.*.pending` folders of crashed jobs (call only while holding the job lock)."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for path in Layout(root).checkpoints.iterdir():
            if is_staging(path.name):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path.name)
    return removed


def non_finite_tensors(state: dict[str, torch.Tensor]) -> list[str]:
    return [
        name
        for name, tensor in state.items()
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())
    ]


def new_identity() -> tuple[str, str]:
    model_id = str(uuid.uuid4())
    rng = random.Random(model_id)
    return model_id, f"{rng.choice(ADJECTIVES)}-{rng.choice(ANIMALS)}-{model_id[:8]}"


def publish_checkpoint(
    root: Path, model_id: str, state: dict[str, torch.Tensor], metadata: Mapping[str, JsonValue]
) -> JsonObject:
    """Write and publish a checkpoint; return its model.json content."""
    bad = non_finite_tensors(state)
    if bad:
        raise RovertrainError(
            "non_finite_weights",
            "The trained weights contain NaN or infinite values; nothing was published.",
            ", ".join(bad[:10]),
        )
    layout = Layout(root)
    directory = layout.checkpoints
    directory.mkdir(parents=True, exist_ok=True)
    staging = layout.staging(model_id)
    target = layout.checkpoint(model_id)
    tensors = {name: tensor.detach().contiguous().cpu() for name, tensor in state.items()}
    weights = safetensors_bytes(tensors, metadata={"format": "pt"})
    try:
        staging.mkdir()
        write_durably(staging / WEIGHTS_FILE, weights)
        files: JsonObject = {
            WEIGHTS_FILE: {"bytes": len(weights), "sha256": hashlib.sha256(weights).hexdigest()}
        }
        document: JsonObject = {**metadata, "id": model_id, "files": files}
        text = json.dumps(document, indent=2, allow_nan=False).encode() + b"\n"
        write_durably(staging / METADATA_FILE, text)
        fsync_directory(staging)
        rename_no_replace(staging, target)
        fsync_directory(directory)
    except FileExistsError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise RovertrainError(
            "publish_conflict",
            f"Checkpoint {model_id} already exists; nothing replaced.",
            str(error),
        ) from None
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise disk_error(error, "checkpoint") from None
    return document
