"""The train-only redraw of the `neverSent` flag of long-silent command types."""

from __future__ import annotations

import numpy as np
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT
from rovertrain.learn.batches import hide_never_sent
from rovertrain.runtime.state import LONG_RAMP, NEVER_SENT, encode_states


def states_of(elapsed_ms: list[float], count: int) -> torch.Tensor:
    """`count` identical state vectors: slot i silent for elapsed_ms[i] (inf: never sent),
    every other slot never sent; each sent slot's last values 0.5."""
    elapsed = np.full((count, SLOTS), np.inf)
    elapsed[:, : len(elapsed_ms)] = elapsed_ms
    values = np.full((count, SLOTS, VALUES), 0.5, dtype=np.float32)
    return torch.from_numpy(encode_states(elapsed, values))


def per_slot(states: torch.Tensor) -> torch.Tensor:
    return states.view(len(states), SLOTS, STATE_FEATURES_PER_SLOT)


def test_long_silent_types_get_a_random_flag_and_recent_ones_keep_theirs() -> None:
    # slot 0 sent 300 ms ago, slot 1 12 s ago, slot 2 never; 4000 examples
    states = states_of([300.0, 12_000.0, np.inf], 4000)
    hidden = per_slot(hide_never_sent(states, 1.0, torch.Generator().manual_seed(0)))
    before = per_slot(states)
    assert torch.equal(hidden[:, 0], before[:, 0])  # recent: untouched
    for slot in (1, 2):
        flags = hidden[:, slot, NEVER_SENT]
        assert set(flags.tolist()) == {0.0, 1.0}
        assert 0.45 < float(flags.mean()) < 0.55  # independent of whether it was ever sent
        # A type shown as never sent shows no last values, as the encoding has it.
        assert torch.all(hidden[flags == 1.0, slot, :VALUES] == 0.0)
        # Everything but the flag and the values is what the encoding wrote.
        assert torch.equal(hidden[:, slot, VALUES + 1 :], before[:, slot, VALUES + 1 :])
    # Slot 1 shown as sent keeps its last values.
    shown_sent = hidden[:, 1, NEVER_SENT] == 0.0
    assert torch.all(hidden[shown_sent, 1, :VALUES] == 0.5)
    assert torch.all(before[:, 1, LONG_RAMP] == 1.0)


def test_zero_probability_returns_the_states_and_the_input_is_never_changed() -> None:
    states = states_of([12_000.0], 64)
    kept = states.clone()
    assert hide_never_sent(states, 0.0, torch.Generator().manual_seed(0)) is states
    hide_never_sent(states, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(states, kept)


def test_a_rank_share_gets_its_rows_of_the_whole_batch_draw() -> None:
    states = states_of([12_000.0, np.inf], 32)
    whole = hide_never_sent(states, 0.7, torch.Generator().manual_seed(3))
    share = slice(8, 24)
    part = hide_never_sent(states[share], 0.7, torch.Generator().manual_seed(3), share, 32)
    assert torch.equal(part, whole[share])
