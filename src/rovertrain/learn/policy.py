"""The driving policy: a small CNN over the camera frame plus the command-state vector.

`specification(schema)` is everything a consumer (the rover side) needs to run the weights.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema
from rovertrain.contracts.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_BINS,
    STATE_FEATURES_PER_SLOT,
    STATE_LONG_MS,
    STATE_SHORT_MS,
)

VERSION = 1
"""Bumped whenever inputs, outputs or architecture change; old resume files become invalid."""

PIXEL_MEAN = 0.5
PIXEL_STD = 0.25


class Policy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.vision = nn.Sequential(
            nn.Conv2d(OBS_CHANNELS, 24, 5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(24, 32, 3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 48, 3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(48, 64, 3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((3, 4)),
            nn.Flatten(),
            nn.Linear(64 * 3 * 4, 128),
            nn.ReLU(inplace=True),
        )
        self.state = nn.Sequential(
            nn.Linear(SLOTS * STATE_FEATURES_PER_SLOT, 128),
            nn.ReLU(inplace=True),
        )
        self.trunk = nn.Sequential(nn.Linear(256, 192), nn.ReLU(inplace=True))
        self.events = nn.Linear(192, SLOTS)
        self.values = nn.Linear(192, SLOTS * VALUES)

    def forward(
        self, images: torch.Tensor, states: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """images: uint8 or float, N×C×H×W; states: float N×S. Returns (logits, values)."""
        if images.dtype == torch.uint8:
            images = images.float() * (1.0 / 255.0)
        images = (images - PIXEL_MEAN) * (1.0 / PIXEL_STD)
        features = torch.cat([self.vision(images), self.state(states)], dim=1)
        hidden = self.trunk(features)
        values = torch.tanh(self.values(hidden)).view(-1, SLOTS, VALUES)
        return self.events(hidden), values


def parameter_count(model: nn.Module | None = None) -> int:
    if model is None:
        return _policy_parameters()
    return sum(parameter.numel() for parameter in model.parameters())


@functools.cache
def _policy_parameters() -> int:
    """Counted once: building a Policy just to count it is not free."""
    return sum(parameter.numel() for parameter in Policy().parameters())


def specification(schema: Schema) -> dict[str, Any]:
    return {
        "version": VERSION,
        "architecture": "cnn4-state-mlp",
        "input": {
            "image": {
                "width": OBS_WIDTH,
                "height": OBS_HEIGHT,
                "channels": OBS_CHANNELS,
                "colour": "rgb24",
                "layout": "NCHW",
                "dtype": "uint8",
                "frameHistory": 1,
                "normalisation": {"scale": 1 / 255, "mean": PIXEL_MEAN, "std": PIXEL_STD},
                "resize": "full frame, aspect not preserved, after display rotation",
            },
            "state": {
                "size": SLOTS * STATE_FEATURES_PER_SLOT,
                "perSlot": [
                    *(f"lastValue[{index}]" for index in range(VALUES)),
                    "neverSent",
                    f"min(msSinceLast,{STATE_SHORT_MS})/{STATE_SHORT_MS}",
                    f"min(msSinceLast,{STATE_LONG_MS})/{STATE_LONG_MS}",
                    *(f"msSinceLast in [{b * 100},{b * 100 + 100})" for b in range(STATE_BINS)),
                ],
                "commandsStrictlyBeforeTickMs": True,
            },
            "tickMs": 100,
        },
        "output": {
            "eventLogits": {"shape": [SLOTS], "activation": "sigmoid"},
            "values": {"shape": [SLOTS, VALUES], "activation": "tanh"},
            "meaning": "slot fires within [tick, tick + 100 ms) with these values",
        },
        "slots": SLOTS,
        "valuesPerSlot": VALUES,
        "schema": schema,
        "parameters": parameter_count(),
        "weightsFormat": "safetensors",
    }
