"""Windows to tensors: the one place a batch is gathered and (for training) augmented."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rovertrain.data.command_schema import SLOTS, VALUES
from rovertrain.data.dataset import WindowSet
from rovertrain.data.observation import STATE_FEATURES_PER_SLOT


@dataclass
class Batch:
    images: torch.Tensor
    states: torch.Tensor
    fires: torch.Tensor
    values: torch.Tensor
    available: torch.Tensor

    def channels_last_images(self) -> torch.Tensor:
        return self.images.contiguous(memory_format=torch.channels_last)


def batch_tensors(windows: WindowSet, indices: np.ndarray | slice) -> Batch:
    # NHWC uint8 permuted to an NCHW view: that is exactly the channels_last layout.
    images = torch.from_numpy(np.ascontiguousarray(windows.frames[indices])).permute(0, 3, 1, 2)
    return Batch(
        images,
        torch.from_numpy(np.ascontiguousarray(windows.states[indices])),
        torch.from_numpy(windows.fires[indices].astype(np.float32)),
        torch.from_numpy(np.ascontiguousarray(windows.values[indices])),
        torch.from_numpy(windows.available[indices].astype(np.float32)),
    )


def augment(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Train-only photometric augmentation: random brightness and contrast per image."""
    count = images.shape[0]
    floats = images.float() * (1.0 / 255.0)
    brightness = (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.3
    contrast = 1.0 + (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.4
    mean = floats.mean(dim=(1, 2, 3), keepdim=True)
    return ((floats - mean) * contrast + mean + brightness).clamp_(0.0, 1.0)


def drop_value_history(
    states: torch.Tensor, probability: float, generator: torch.Generator
) -> torch.Tensor:
    """Train-only: for each example with `probability`, the `lastValue` features of every
    slot read 0, so the values must come from the camera rather than from the last command
    sent (a policy that copies its last command cannot steer when it drives itself). The
    timing features stay: when the teleop page re-sends is not in the picture."""
    if probability <= 0:
        return states
    count = states.shape[0]
    dropped = torch.rand(count, generator=generator) < probability
    per_slot = states.view(count, SLOTS, STATE_FEATURES_PER_SLOT).clone()
    per_slot[dropped, :, :VALUES] = 0.0
    return per_slot.view(count, SLOTS * STATE_FEATURES_PER_SLOT)
