"""Windows to tensors: the one place a batch is gathered and (for training) augmented."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import OBS_CHANNELS, STATE_FEATURES_PER_SLOT
from rovertrain.data.window_set import WindowSet
from rovertrain.learn.metrics import command_changes, motion_type_changes
from rovertrain.runtime.state import LONG_RAMP, NEVER_SENT, last_values_of, recency_of


@dataclass
class Batch:
    images: torch.Tensor
    states: torch.Tensor
    fires: torch.Tensor
    values: torch.Tensor
    available: torch.Tensor
    changes: torch.Tensor  # [B, SLOTS] float: 1 where the command event changes something
    type_changes: torch.Tensor  # [B, SLOTS] float: 1 where it switches stop <-> movement

    def channels_last_images(self) -> torch.Tensor:
        return self.images.contiguous(memory_format=torch.channels_last)

    def to(self, device: torch.device) -> Batch:
        """The batch on `device` (itself when already there)."""
        if device.type == "cpu":
            return self
        images, states, fires, values, available, changes, type_changes = (
            tensor.to(device, non_blocking=True)
            for tensor in (
                self.images,
                self.states,
                self.fires,
                self.values,
                self.available,
                self.changes,
                self.type_changes,
            )
        )
        return Batch(images, states, fires, values, available, changes, type_changes)


def batch_tensors(
    windows: WindowSet, indices: np.ndarray | slice, motion: np.ndarray | None = None
) -> Batch:
    """`motion`: bool [SLOTS], the stop- and movement-role slots (`type_changes`); None: all."""
    # The frame history along the channels (this tick's, then the previous tick's), NHWC
    # uint8 permuted to an NCHW view: that is exactly the channels_last layout.
    images = torch.from_numpy(windows.pictures(indices)).permute(0, 3, 1, 2)
    states = np.ascontiguousarray(windows.states[indices])
    fires = windows.fires[indices].astype(bool)
    values = np.ascontiguousarray(windows.values[indices])
    available = windows.available[indices].astype(bool)
    recency = recency_of(states)
    changes = command_changes(fires, values, available, last_values_of(states), recency)
    motion = np.ones(SLOTS, dtype=bool) if motion is None else motion
    type_changes = motion_type_changes(fires, recency, motion)
    return Batch(
        images,
        torch.from_numpy(states),
        torch.from_numpy(fires.astype(np.float32)),
        torch.from_numpy(values),
        torch.from_numpy(available.astype(np.float32)),
        torch.from_numpy(changes.astype(np.float32)),
        torch.from_numpy(type_changes.astype(np.float32)),
    )


def augment(
    images: torch.Tensor,
    generator: torch.Generator,
    share: slice = slice(None),
    drawn: int | None = None,
    colour: float = 0.0,
    shift: int = 0,
) -> torch.Tensor:
    """Train-only augmentation: random brightness and contrast per image; with `colour` > 0
    a random gain per colour channel in [1 - colour/2, 1 + colour/2] (a camera's white
    balance, a room's light); with `shift` > 0 a random vertical translation of up to `shift`
    pixels each way, the edges repeated (a camera's pitch, a bump). Never sideways: a
    sideways shift looks like a change of heading, and the steering label would not follow.

    `images` may be a rank's `share` of a batch of `drawn` images: the draws are made for the
    whole batch, so every rank's generator stays in step with a single process's. The colour
    and shift draws come after the brightness and contrast ones, and only when enabled.
    """
    count = images.shape[0] if drawn is None else drawn
    brightness = (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.3
    contrast = 1.0 + (torch.rand(count, 1, 1, 1, generator=generator) - 0.5) * 0.4
    brightness, contrast = brightness[share].to(images.device), contrast[share].to(images.device)
    gains = None
    if colour > 0:
        # One gain per colour, the same for every frame of the history (one camera).
        gains = 1.0 + (torch.rand(count, OBS_CHANNELS, 1, 1, generator=generator) - 0.5) * colour
    offsets = None
    if shift > 0:
        offsets = torch.randint(0, 2 * shift + 1, (count, 1), generator=generator)[share] - shift
    # Contrast around each frame's own mean (the history's frames are pictures of their own),
    # taken before the shift repeats an edge.
    history = images.shape[1] // OBS_CHANNELS
    # Each channel's mean over its picture, on the N×H·W×C view (the channels_last layout):
    # a picture's sum of bytes (at most 96·72·255, far below 2^24) is exact in float32 in
    # any order, so this is the N×C×H×W mean bit for bit, in half the time.
    _, channels, height, width = images.shape
    pixels = images.permute(0, 2, 3, 1).reshape(len(images), height * width, channels)
    means = pixels.float().mean(dim=1)
    per_frame = means.view(len(images), history, OBS_CHANNELS).mean(dim=2)
    mean = per_frame.repeat_interleave(OBS_CHANNELS, dim=1)[:, :, None, None] * (1.0 / 255.0)
    # Every step is one affine map per image and channel: x * scale + offset. The shift only
    # moves pixels, so it is done first, on the bytes (a quarter of the floats' memory); the
    # map then converts and scales in one pass. A batch of 6-channel floats is megabytes:
    # each temporary costs page faults, and a reshape out of channels_last copies.
    scale = contrast * (1.0 / 255.0)
    offset = mean * (1.0 - contrast) + brightness
    if gains is not None:
        gains = gains[share].repeat(1, history, 1, 1).to(images.device)
        scale, offset = scale * gains, offset * gains
    if offsets is not None:
        images = shift_rows(images, offsets.to(images.device).view(-1))
    return affine_rows(images, scale, offset)


def affine_rows(images: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """`images * scale + offset` clamped to [0, 1], as float32 channels_last; `scale` and
    `offset` broadcast to N×C×1×1 (one per image, or per image and channel).

    Why rows: in the channels_last layout a channel is the innermost dimension, so a
    per-channel factor broadcast over N×C×H×W changes every 6 elements and the elementwise
    kernel cannot run long vectors (8.5 ms for a 64×6×72×96 batch on 2 cores). Spread over
    one picture row (W×C, contiguous) it broadcasts over the rows only: the same products and
    sums, bit for bit, in 0.5 ms."""
    count, channels, height, width = images.shape
    rows = images.permute(0, 2, 3, 1).contiguous().view(count, height, width * channels)

    def per_row(factor: torch.Tensor) -> torch.Tensor:
        per_channel = factor.expand(count, channels, 1, 1).reshape(count, 1, 1, channels)
        spread = per_channel.expand(count, 1, width, channels)
        return spread.reshape(count, 1, width * channels)

    out = rows.float().mul_(per_row(scale)).add_(per_row(offset)).clamp_(0.0, 1.0)
    return out.view(count, height, width, channels).permute(0, 3, 1, 2)


def shift_rows(images: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """images N×C×H×W (channels_last) moved vertically, edges repeated: output row y of image
    n is input row y + offsets[n], clamped to the picture. The result is channels_last."""
    count, channels, height, width = images.shape
    rows = (torch.arange(height, device=images.device)[None, :] + offsets[:, None]).clamp_(
        0, height - 1
    )
    rows += torch.arange(count, device=images.device)[:, None] * height
    # In the channels_last layout each picture row (W×C) is one contiguous run: selecting
    # whole rows of the N·H × W·C view copies runs (a tenth of an element-wise gather's time).
    flat = images.permute(0, 2, 3, 1).contiguous().view(count * height, width * channels)
    moved = flat.index_select(0, rows.view(-1))
    return moved.view(count, height, width, channels).permute(0, 3, 1, 2)


def drop_value_history(
    states: torch.Tensor,
    probability: float,
    generator: torch.Generator,
    share: slice = slice(None),
    drawn: int | None = None,
) -> torch.Tensor:
    """Train-only: for each example with `probability`, the `lastValue` features of every
    slot read 0, so the values must come from the camera rather than from the last command
    sent (a policy that copies its last command cannot steer when it drives itself). The
    timing features stay: when the teleop page re-sends is not in the picture.

    Like `augment`, draws for all `drawn` examples of a batch of which `states` is a `share`."""
    if probability <= 0:
        return states
    count = states.shape[0]
    dropped = torch.rand(count if drawn is None else drawn, generator=generator) < probability
    dropped = dropped[share].to(states.device)
    per_slot = states.view(count, SLOTS, STATE_FEATURES_PER_SLOT).clone()
    per_slot[dropped, :, :VALUES] = 0.0
    return per_slot.view(count, SLOTS * STATE_FEATURES_PER_SLOT)


def hide_never_sent(
    states: torch.Tensor,
    probability: float,
    generator: torch.Generator,
    share: slice = slice(None),
    drawn: int | None = None,
) -> torch.Tensor:
    """Train-only: for each command type silent for 10 s or more, with `probability` its
    `neverSent` feature is redrawn at random (a type shown as never sent also shows no last
    values, as the state vector encodes it).

    In recordings a type never sent marks the start of a session, before anything happened;
    a policy that learns so stops less once it drives itself without ever sending that type
    (a warehouse model that almost never honked stopped for 5 of 14 obstacles,
    docs/learning.md).
    Redrawn, the flag says nothing about what comes next; for a type without values long
    silence then looks the same whether or not it was ever sent (one with values, really never
    sent, still shows zeros). Draws like `augment`: for all `drawn` examples."""
    if probability <= 0:
        return states
    count = states.shape[0]
    total = count if drawn is None else drawn
    redraw = (torch.rand(total, SLOTS, generator=generator) < probability)[share]
    never = (torch.rand(total, SLOTS, generator=generator) < 0.5)[share]
    redraw, never = redraw.to(states.device), never.to(states.device)
    per_slot = states.view(count, SLOTS, STATE_FEATURES_PER_SLOT).clone()
    redrawn = redraw & (per_slot[:, :, LONG_RAMP] >= 1.0)
    per_slot[:, :, NEVER_SENT] = torch.where(
        redrawn, never.to(per_slot.dtype), per_slot[:, :, NEVER_SENT]
    )
    per_slot[:, :, :VALUES] = per_slot[:, :, :VALUES].masked_fill((redrawn & never)[..., None], 0.0)
    return per_slot.view(count, SLOTS * STATE_FEATURES_PER_SLOT)
