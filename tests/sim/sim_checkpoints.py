"""Hand-set checkpoints the simulator tests drive (no training)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.learn.policy import Policy, specification
from rovertrain.store.publish import publish_checkpoint


def driving_checkpoint(
    root: Path,
    model_number: int,
    set_values: Callable[[Policy], None] | None = None,
    schema: list[Any] | None = None,
) -> Path:
    """A published checkpoint whose policy fires `drive` (slot 1) every tick and never stop:
    the rover moves. `set_values` sets the value head (default: speed about 0.76, the rest
    what seed 4's weights give); its id is UUID(int=model_number)."""
    torch.manual_seed(4)
    model = Policy().eval()
    with torch.no_grad():
        model.events.bias.copy_(torch.tensor([-6.0, 6.0] + [-6.0] * 6))
        if set_values is None:
            model.values.bias[4] = 1.0  # drive speed (slot 1, value 0) about 0.76
        else:
            set_values(model)
    model_id = str(uuid.UUID(int=model_number))
    metadata = {
        "name": f"sim-test-{model_number}",
        "createdAt": 1,
        "specification": specification(schema or initial_schema()),
        "actionThreshold": 0.5,
        "promote": True,
    }
    publish_checkpoint(root, model_id, dict(model.state_dict()), metadata)
    return root / "training" / "checkpoints" / model_id
