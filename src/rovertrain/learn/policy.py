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
from rovertrain.contracts.runtime_spec import EXPECTED_LEVEL
from rovertrain.learn.levels import MOST_LEVELS, ValueLevels

VERSION = 6
"""Bumped whenever inputs, outputs or architecture change; old resume files become invalid.
2: the image input stacks the previous tick's frame (`FRAME_HISTORY`).
3: the value head's own path (the picture's features, the motion between the two frames row
by row, its own reading of the state); the event head sees this tick's frame and the whole
state.
4: the state shows a superseded stop- or movement-role type without its 100 ms bins
(`runtime.state.superseded_motion`; `input.state.superseded` in the specification).
5: a value column the recordings send at a few levels is classified over them, the most
likely level sent (`learn.levels`; `output.values.levels` in the specification).
6: a levelled column the person taps outputs its expected level, which the runtime sends as
levels averaging it; one the person holds its most likely level (`output.values.levelOutput`
"expected", `output.values.spread`; runtime.json format 4)."""

VALUE_PATH = ("motion", "value_state", "value_trunk", "values", "levels")
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
        # Built last, so every other module draws the initial weights it drew before levels.
        self.levels = nn.Linear(128, SLOTS * VALUES * MOST_LEVELS)
        self.level_values: torch.Tensor
        self.level_known: torch.Tensor
        self.register_buffer("level_values", torch.zeros(SLOTS, VALUES, MOST_LEVELS))
        self.register_buffer("level_known", torch.zeros(SLOTS, VALUES, MOST_LEVELS))
        self.level_spread: torch.Tensor
        self.register_buffer("level_spread", torch.zeros(SLOTS, VALUES))

    def use_levels(self, levels: ValueLevels) -> None:
        """Classify the columns `levels` names (a fresh policy regresses every column)."""
        device = self.level_values.device
        self.level_values.copy_(torch.from_numpy(levels.values).to(device))
        self.level_known.copy_(torch.from_numpy(levels.known.astype("float32")).to(device))
        self.level_spread.copy_(torch.from_numpy(levels.spread.astype("float32")).to(device))

    def value_levels(self) -> ValueLevels:
        return ValueLevels(
            self.level_values.detach().cpu().numpy().copy(),
            self.level_known.detach().cpu().numpy() > 0.5,
            self.level_spread.detach().cpu().numpy() > 0.5,
        )

    def sent_values(self, regressed: torch.Tensor, level_logits: torch.Tensor) -> torch.Tensor:
        """The values output: a tapped levelled column's expected level (its levels weighted
        by their probabilities; the runtime sends levels that average it), a held one's most
        likely level, the others regressed (`learn.levels`)."""
        masked = level_logits.float().masked_fill(self.level_known <= 0.5, -1e4)
        table = self.level_values.expand(level_logits.shape)
        expected = (masked.softmax(dim=3) * table).sum(dim=3)
        likely = torch.gather(table, 3, masked.argmax(dim=3, keepdim=True)).squeeze(3)
        levelled = torch.where(self.level_spread > 0.5, expected, likely)
        return torch.where(self.level_known.amax(dim=2) > 0.5, levelled, regressed.float())

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
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]: ...

    def forward(
        self,
        images: torch.Tensor,
        states: torch.Tensor,
        auxiliary: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """images: uint8 or float, N×C×H×W (C: the frame history's channels, this tick's
        first); states: float N×S. Returns (logits, values sent); with `auxiliary`
        (training) also the event trunk's value prediction (never sent) and the level head's
        logits N×SLOTS×VALUES×MOST_LEVELS."""
        if images.dtype == torch.uint8:
            images = images.float() * (1.0 / 255.0)
        images = (images - PIXEL_MEAN) * (1.0 / PIXEL_STD)
        seen = self.vision(images[:, :OBS_CHANNELS])
        hidden = self.trunk(torch.cat([seen, self.state(states)], dim=1))
        timing = self.value_state(states)
        moving = self.motion(images.mean(dim=3))
        value_hidden = self.value_trunk(torch.cat([seen.detach(), moving, timing], dim=1))
        regressed = torch.tanh(self.values(value_hidden)).view(-1, SLOTS, VALUES)
        level_logits = self.levels(value_hidden).view(-1, SLOTS, VALUES, MOST_LEVELS)
        values = self.sent_values(regressed, level_logits)
        if not auxiliary:
            return self.events(hidden), values
        shared = torch.tanh(self.shared_values(hidden)).view(-1, SLOTS, VALUES)
        return self.events(hidden), values, shared, level_logits


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


def specification(
    schema: Schema,
    levels: ValueLevels | None = None,
    resend_after: dict[str, float] | None = None,
    event_weights: dict[str, float] | None = None,
) -> dict[str, Any]:
    """What a consumer needs to run the weights; `levels`: the value columns classified over
    levels (`output.values.levels`, {type: {value: [levels]}}; absent: every value regressed);
    `resend_after`: per type, how soon the recordings' person re-sent a command that changed
    nothing (`output.resendAfterMs`, `learn.resends`; absent: re-sent whenever it fires);
    `event_weights`: per type, how many silent windows the event loss counted a firing one as
    (`output.eventWeights`, `learn.event_weights`), which the runtime undoes to read the
    person's chance (`runtime.policy.person_chance`); absent: fired at the threshold."""
    named = levels.to_json(schema) if levels is not None else {}
    values: dict[str, Any] = {"shape": [SLOTS, VALUES], "activation": "tanh"}
    if named:
        values["levels"] = named
        values["levelOutput"] = EXPECTED_LEVEL
        values["spread"] = levels.spread_json(schema) if levels is not None else {}
        values["activation"] = (
            "tanh; a column with levels the person taps (spread) gives its expected level, "
            "sent as levels that average it (runtime.policy.level_to_send); one the person "
            "holds gives its most likely level"
        )
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
            "values": values,
            "meaning": f"slot fires within [tick, tick + {TICK_MS} ms) with these values",
            **({"resendAfterMs": resend_after} if resend_after else {}),
            **({"eventWeights": event_weights} if event_weights else {}),
        },
        "slots": SLOTS,
        "valuesPerSlot": VALUES,
        "schema": schema,
        "parameters": parameter_count(),
        "weightsFormat": "safetensors",
    }
