"""What training minimises: weighted event BCE plus masked command-value MSE.

The value loss counts a re-send (a command that repeats the values of the last one of its
type) with `resend_value_weight` against 1 for a change: re-sends outnumber changes several
times over and are answered by copying the state vector's last values, which teaches the value
head to copy; when the policy drives itself, a copied value never corrects its course
(docs/learning.md, "Values from the camera").

The event loss counts a window whose command switches between the stop and movement roles
with `type_change_event_weight` (1: like any other window): the drive that restarts after a
stop is rare next to the keepalives and the re-sent stops, and only the camera can tell that
the way is clear. Weighting every value change instead made the warehouse model fire `drive`
in three windows of four (docs/learning.md).

A value column the recordings send at a few levels (`learn.levels`) is scored by the level
head's cross-entropy against the level sent, not by squared error: squared error is lowest at
the mean of the levels a state could get, a value no person sends."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from rovertrain.contracts.command_schema import SLOTS, Schema
from rovertrain.data.window_set import WindowSet
from rovertrain.learn.batches import Batch
from rovertrain.learn.event_weights import event_weights
from rovertrain.learn.levels import ValueLevels, discover_levels
from rovertrain.runtime.state import last_values_of, motion_slots


@dataclass
class LossSetup:
    numeric_mask: torch.Tensor  # [SLOTS, VALUES] float: value columns that carry numbers
    positive_weight: torch.Tensor  # [SLOTS] BCE positive weights
    slot_mask: torch.Tensor  # [SLOTS] float: slots the schema defines
    resend_value_weight: float = 1.0
    type_change_event_weight: float = 1.0
    motion_slots: np.ndarray | None = None  # bool [SLOTS]: stop- and movement-role slots
    levels: ValueLevels | None = None  # the pool's value levels (None: every value regressed)
    level_values: torch.Tensor | None = None  # [SLOTS, VALUES, MOST_LEVELS] float
    level_known: torch.Tensor | None = None  # [SLOTS, VALUES, MOST_LEVELS] bool

    @property
    def levelled(self) -> torch.Tensor | None:
        """bool [SLOTS, VALUES]: the columns classified over levels; None: none is."""
        if self.levels is None or self.level_known is None or not self.levels.levelled.any():
            return None
        return self.level_known.any(dim=2)


def selection_setup(setup: LossSetup) -> LossSetup:
    """The loss that selects the published weights and decides convergence: every window
    alike. With the restarts weighted, the few restart windows of the held-back tails made the
    selection loss jump between measurements, and patience ended training early (road data
    seed 3: best step 600, docs/learning.md)."""
    return replace(setup, type_change_event_weight=1.0)


def loss_setup(
    pool: WindowSet,
    schema: Schema,
    resend_value_weight: float = 1.0,
    type_change_event_weight: float = 1.0,
) -> LossSetup:
    slot_mask = torch.zeros(SLOTS)
    slot_mask[: len(schema)] = 1.0
    motion = motion_slots(schema)
    numeric = torch.from_numpy((pool.available.sum(axis=0) > 0).astype(np.float32))
    numeric = numeric * slot_mask[:, None]
    weight = event_weights(pool.fires)
    levels = discover_levels(pool.values, pool.available, last_values_of(pool.states))
    return LossSetup(
        numeric,
        torch.from_numpy(weight.astype(np.float32)),
        slot_mask,
        resend_value_weight,
        type_change_event_weight,
        motion,
        levels,
        torch.from_numpy(levels.values),
        torch.from_numpy(levels.known),
    )


def losses(
    logits: torch.Tensor,
    predictions: torch.Tensor,
    batch: Batch,
    setup: LossSetup,
    level_logits: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(event loss, command-value loss), both in float32."""
    logits = logits.float()
    predictions = predictions.float()
    per_slot = F.binary_cross_entropy_with_logits(
        logits, batch.fires, pos_weight=setup.positive_weight, reduction="none"
    )
    if setup.type_change_event_weight != 1.0:
        per_slot = per_slot * (1.0 + (setup.type_change_event_weight - 1.0) * batch.type_changes)
    event_loss = (per_slot * setup.slot_mask).sum() / (setup.slot_mask.sum() * len(batch.fires))
    return event_loss, values_loss(predictions, batch, setup, level_logits)


def values_loss(
    predictions: torch.Tensor,
    batch: Batch,
    setup: LossSetup,
    level_logits: torch.Tensor | None = None,
) -> torch.Tensor:
    """The command-value loss (float32): squared error on the values sent, the changes
    weighted 1 and the re-sends `resend_value_weight`; with `level_logits` (the value head's),
    a levelled column's term is the cross-entropy of the level sent, every send weighted 1."""
    predictions = predictions.float()
    kind_weight = batch.changes + (1.0 - batch.changes) * setup.resend_value_weight
    weight = kind_weight[:, :, None].expand_as(predictions)
    per_value = (predictions - batch.values) ** 2
    levelled = setup.levelled
    if level_logits is not None and levelled is not None:
        per_value = torch.where(levelled, level_loss(level_logits, batch.values, setup), per_value)
        # Every send of a level counts: a held key's repeat is the person's decision to keep
        # the level, and the level they would send now is what the rover must be sent.
        weight = torch.where(levelled, torch.ones_like(weight), weight)
    mask = batch.available * setup.numeric_mask * weight
    count = mask.sum()
    # The level head stays in the graph when it has nothing to learn: DistributedDataParallel
    # expects a gradient, zero then, for every parameter in every step.
    unused = 0.0 if level_logits is None else level_logits.float().sum() * 0.0
    if count <= 0:
        return predictions.sum() * 0.0 + unused
    return (per_value * mask).sum() / count + unused


def level_loss(level_logits: torch.Tensor, values: torch.Tensor, setup: LossSetup) -> torch.Tensor:
    """[N, SLOTS, VALUES]: each value's cross-entropy against its nearest level (finite, and
    meaningless, in a column without levels)."""
    assert setup.level_values is not None and setup.level_known is not None
    known = setup.level_known
    distance = (values[..., None] - setup.level_values).abs().masked_fill(~known, float("inf"))
    target = distance.argmin(dim=3, keepdim=True)
    logits = level_logits.float().masked_fill(~known, -1e4)
    return torch.logsumexp(logits, dim=3) - torch.gather(logits, 3, target).squeeze(3)
