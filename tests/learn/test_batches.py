"""Train-only input corruptions."""

from __future__ import annotations

import torch

from rovertrain.data.command_schema import SLOTS, VALUES
from rovertrain.data.observation import STATE_FEATURES_PER_SLOT
from rovertrain.learn.batches import drop_value_history


def test_value_history_dropout_hides_only_the_last_values() -> None:
    states = torch.rand(400, SLOTS * STATE_FEATURES_PER_SLOT) + 0.1
    original = states.clone()
    generator = torch.Generator().manual_seed(0)
    assert drop_value_history(states, 0.0, generator) is states
    dropped = drop_value_history(states, 0.5, generator).view(400, SLOTS, -1)
    assert torch.equal(states, original)  # the batch itself is not modified
    hidden = (dropped[:, :, :VALUES] == 0).all(dim=2).all(dim=1)
    assert 120 < int(hidden.sum()) < 280  # about half the examples
    assert (dropped[~hidden, :, :VALUES] > 0).all()
    assert torch.equal(dropped[:, :, VALUES:], original.view(400, SLOTS, -1)[:, :, VALUES:])
    everything = drop_value_history(states, 1.0, generator).view(
        400, SLOTS, STATE_FEATURES_PER_SLOT
    )
    assert (everything[:, :, :VALUES] == 0).all()
