"""The resume state: weights, optimizer and counters carried from one job to the next.

Loaded with `weights_only=True` only; a different policy version, a corrupt or a tampered file
is refused (`resume_incompatible`), never silently replaced by a fresh start.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import cast

import torch

from rovertrain.contracts.command_schema import validate_schema
from rovertrain.contracts.errors import RovertrainError
from rovertrain.job.state import SavedState
from rovertrain.learn.policy import VERSION
from rovertrain.store.durable import atomic_replace, disk_error
from rovertrain.store.layout import Layout

UNSAFE_ENV = ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD",)


def resume_path(root: Path) -> Path:
    return Layout(root).resume(VERSION)


def _refuse(path: Path, why: str) -> RovertrainError:
    return RovertrainError(
        "resume_incompatible",
        f"The resume state {path.name} cannot be used ({why}). Move it aside to start fresh.",
        why,
    )


def load_resume(root: Path) -> SavedState | None:
    path = resume_path(root)
    if not path.exists():
        return None
    # An environment override must never turn this into an unpickling of arbitrary code.
    saved_env = {name: os.environ.pop(name) for name in UNSAFE_ENV if name in os.environ}
    try:
        with open(path, "rb") as stream:
            state = torch.load(stream, map_location="cpu", weights_only=True)
    except Exception as error:
        raise _refuse(path, f"{type(error).__name__}: {str(error)[:300]}") from None
    finally:
        os.environ.update(saved_env)
    if not isinstance(state, dict) or state.get("version") != VERSION:
        version = state.get("version") if isinstance(state, dict) else None
        raise _refuse(path, f"policy version {version!r}, this rovertrain needs {VERSION}")
    try:
        validate_schema(state["schema"])
        for key in ("weights", "optimizer"):
            if not isinstance(state[key], dict):
                raise ValueError(f"{key} is not a state dict")
        for key in ("steps", "examples", "lastPublished", "publishedWindows"):
            if not isinstance(state[key], int) or state[key] < 0:
                raise ValueError(f"{key} is not a count")
    except (KeyError, ValueError) as error:
        raise _refuse(path, str(error)) from None
    return cast(SavedState, state)  # the keys every resume file has, checked above


def save_resume(root: Path, state: SavedState) -> None:
    buffer = io.BytesIO()
    torch.save({**state, "version": VERSION}, buffer)
    try:
        atomic_replace(resume_path(root), buffer.getvalue())
    except OSError as error:
        raise disk_error(error, "resume state") from None
