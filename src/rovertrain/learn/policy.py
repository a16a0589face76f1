"""The driving policy: a small CNN over the camera frame plus the command-state vector, and
the value head's own path (the motion between the two frames of the history).

`specification(schema)` is everything a consumer (the rover side) needs to run the weights.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, overload

import torch
from torch import nn

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema
from rovertrain.contracts.observation import (
    FRAME_HISTORY,
    MODEL_CHANNELS,
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_BIN_MS,
    STATE_BINS,
    STATE_FEATURES_PER_SLOT,
    STATE_LONG_MS,
    STATE_SHORT_MS,
    SUPERSEDED_WITHOUT_BINS,
    TICK_MS,
)

VERSION = 4
"""Bumped whenever inputs, outputs or architecture change; old resume files become invalid.
2: the image input stacks the previous tick's frame (`FRAME_HISTORY`).
3: the value head's own path (the picture's features, the motion between the two frames row
by row, its own reading of the state); the event head sees this tick's frame and the whole
state.
4: the state shows a superseded stop- or movement-role type without its 100 ms bins
(`runtime.state.superseded_motion`; `input.state.superseded` in the specification)."""

VALUE_PATH = ("motion", "value_state", "value_trunk", "values")
"""The value head's own modules. Everything else (the shared encoder, the event trunk and its
heads) trains exactly as the one-head policy did: clipped on its own (`in_value_path`)."""

PIXEL_MEAN = 0.5
PIXEL_STD = 0.25


class Policy(nn.Module):
    """Two heads over one camera encoder.

    The event head (which command fires) reads this tick's picture and the whole state: the
    command history is how it knows a keepalive is due. It never sees the previous picture:
    in teleop logs two identical pictures mean a stop is being re-sent, a shortcut the event
    head would take instead of the obstacle (the warehouse, docs/learning.md). The event
    trunk also predicts values (`shared_values`), trained and never sent: that dense loss is
    what teaches the encoder the scene (without it the warehouse model ignored obstacles).

    The value head (what to send) reads the picture's features (without training them: the
    shared encoder learns as with one head), the motion between the two pictures and the
    state through its own layer. The motion is read row by row (each row's mean over the
    width): how fast the ground comes closer shows, which one picture cannot show, and a
    sideways shift (the rover turning) hardly does: a value head that sees the turn being
    executed can copy it (docs/learning.md, "Speed from the camera", the warehouse cells)."""

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
        self.shared_values = nn.Linear(192, SLOTS * VALUES)
        # The motion between the two pictures, row by row: each row's mean over its width,
        # so a sideways shift (the rover turning) hardly shows and the flow along the
        # picture's height (the ground coming closer: speed) does.
        self.motion = nn.Sequential(
            nn.Conv1d(MODEL_CHANNELS, 32, 5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.Conv1d(32, 32, 5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool1d(6),
            nn.Flatten(),
            nn.Linear(32 * 6, 32),
            nn.ReLU(inplace=True),
        )
        self.value_state = nn.Sequential(
            nn.Linear(SLOTS * STATE_FEATURES_PER_SLOT, 64),
            nn.ReLU(inplace=True),
        )
        self.value_trunk = nn.Sequential(nn.Linear(128 + 32 + 64, 128), nn.ReLU(inplace=True))
        self.values = nn.Linear(128, SLOTS * VALUES)

    @overload
    def forward(
        self,
        images: torch.Tensor,
        states: torch.Tensor,
        auxiliary: Literal[False] = False,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    @overload
    def forward(
        self,
        images: torch.Tensor,
        states: torch.Tensor,
        auxiliary: Literal[True],
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

    def forward(
        self,
        images: torch.Tensor,
        states: torch.Tensor,
        auxiliary: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """images: uint8 or float, N×C×H×W (C: the frame history's channels, this tick's
        first); states: float N×S. Returns (logits, values); with
        `auxiliary` (training) also the event trunk's value prediction (never sent)."""
        if images.dtype == torch.uint8:
            images = images.float() * (1.0 / 255.0)
        images = (images - PIXEL_MEAN) * (1.0 / PIXEL_STD)
        seen = self.vision(images[:, :OBS_CHANNELS])
        hidden = self.trunk(torch.cat([seen, self.state(states)], dim=1))
        timing = self.value_state(states)
        moving = self.motion(images.mean(dim=3))
        value_hidden = self.value_trunk(torch.cat([seen.detach(), moving, timing], dim=1))
        values = torch.tanh(self.values(value_hidden)).view(-1, SLOTS, VALUES)
        if not auxiliary:
            return self.events(hidden), values
        shared = torch.tanh(self.shared_values(hidden)).view(-1, SLOTS, VALUES)
        return self.events(hidden), values, shared


def in_value_path(name: str) -> bool:
    """Whether the parameter `name` (from `named_parameters`, possibly under
    DistributedDataParallel's `module.`) belongs to the value head's own path."""
    return name.removeprefix("module.").split(".")[0] in VALUE_PATH


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
        "architecture": "cnn4-state-mlp+row-motion-values",
        "input": {
            "image": {
                "width": OBS_WIDTH,
                "height": OBS_HEIGHT,
                "channels": OBS_CHANNELS,
                "colour": "rgb24",
                "layout": "NCHW",
                "dtype": "uint8",
                "frameHistory": FRAME_HISTORY,
                "frameOrder": "channels 0-2 this tick's frame, 3-5 the previous tick's "
                "(the same frame when there is none)",
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
                    *(
                        f"msSinceLast in [{b * STATE_BIN_MS},{(b + 1) * STATE_BIN_MS})"
                        for b in range(STATE_BINS)
                    ),
                ],
                "commandsStrictlyBeforeTickMs": True,
                "superseded": SUPERSEDED_WITHOUT_BINS,
            },
            "tickMs": TICK_MS,
        },
        "output": {
            "eventLogits": {"shape": [SLOTS], "activation": "sigmoid"},
            "values": {"shape": [SLOTS, VALUES], "activation": "tanh"},
            "meaning": f"slot fires within [tick, tick + {TICK_MS} ms) with these values",
        },
        "slots": SLOTS,
        "valuesPerSlot": VALUES,
        "schema": schema,
        "parameters": parameter_count(),
        "weightsFormat": "safetensors",
    }
