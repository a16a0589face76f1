"""How the event loss weighs a window where a type fires, and that the runtime's reading of a
weighted model's answer (`runtime.policy.person_chance`) is the person's chance it learned."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.command_schema import SLOTS, initial_schema
from rovertrain.learn.event_weights import WEIGHT_RANGE, event_weights, event_weights_json
from rovertrain.runtime.policy import person_chance


def test_a_firing_window_counts_as_the_silent_ones_within_the_range() -> None:
    fires = np.zeros((1000, SLOTS))
    fires[:100, 0] = 1  # 1 in 10: 9 silent windows per firing one
    fires[:, 1] = 1  # fires everywhere: at least 1
    fires[:2, 2] = 1  # 1 in 500: at most 20
    weights = event_weights(fires)
    assert weights[0] == pytest.approx(9.0)
    assert weights[1] == WEIGHT_RANGE[0]
    assert weights[2] == WEIGHT_RANGE[1]
    assert weights[3] == 1.0  # never fires
    assert event_weights_json(weights, initial_schema()) == {"stop": 9.0, "drive": 1.0}


@pytest.mark.parametrize(("chance", "weight"), [(0.02, 20.0), (0.1, 47.0), (0.3, 1.0), (0.6, 4.0)])
def test_a_weighted_loss_learns_weighted_odds_and_person_chance_undoes_them(
    chance: float, weight: float
) -> None:
    """One logit fitted, with the loss training uses, to windows where the person sends with
    `chance`: its probability is the weighted odds, and `person_chance` gives `chance` back."""
    fires = torch.zeros(1000)
    fires[: round(chance * 1000)] = 1.0
    logit = torch.zeros(1, requires_grad=True)
    optimiser = torch.optim.LBFGS([logit], max_iter=200)

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        value = F.binary_cross_entropy_with_logits(
            logit.expand(1000), fires, pos_weight=torch.tensor(weight)
        )
        value.backward()
        return value

    optimiser.step(loss)
    probability = float(torch.sigmoid(logit.detach()))
    odds = weight * chance / (1 - chance)
    assert probability == pytest.approx(odds / (1 + odds), abs=1e-4)
    assert person_chance(probability, weight) == pytest.approx(chance, abs=1e-4)


@settings(max_examples=200)
@given(st.floats(0.0, 1.0), st.floats(1.0, 2000.0))
def test_person_chance_is_a_chance_never_above_the_probability(p: float, weight: float) -> None:
    q = person_chance(p, weight)
    assert 0.0 <= q <= p + 1e-12
    assert person_chance(p, 1.0) == pytest.approx(p)
