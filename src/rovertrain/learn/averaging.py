"""An exponential moving average of the policy's weights, the copy that is selected and published.

Single training steps on small driving data sets jitter the weights; closed loop, the jitter
shows as a policy that weaves. The average is measured by the selection signal instead of the
raw weights, and the best average is what the job publishes. The decay warms up, (1 + n) /
(10 + n) after n updates, so early averages are not dominated by the initial weights.
"""

from __future__ import annotations

import copy

import torch

from rovertrain.learn.policy import Policy

CPU = torch.device("cpu")


def warmed_decay(decay: float, updates: int) -> float:
    """The decay used for update number `updates` (0-based). Pure."""
    return min(decay, (1.0 + updates) / (10.0 + updates))


class WeightAverage:
    """A CPU copy of `model` whose parameters follow the trained ones with `decay`; buffers are
    copied as they are."""

    def __init__(self, model: Policy, decay: float):
        self.source, self.decay = model, decay
        self.model: Policy = copy.deepcopy(model).to(CPU)
        self.model.eval()
        self.updates = 0

    @torch.no_grad()
    def update(self) -> None:
        weight = 1.0 - warmed_decay(self.decay, self.updates)
        for average, trained in zip(self.model.parameters(), self.source.parameters(), strict=True):
            average.lerp_(trained.detach().to(CPU, torch.float32), weight)
        for kept, buffer in zip(self.model.buffers(), self.source.buffers(), strict=True):
            kept.copy_(buffer.detach().to(CPU))
        self.updates += 1
