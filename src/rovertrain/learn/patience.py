"""When training stops helping: the patience rule over the selection signal. Pure.

The signal is the loss on the selection windows (the held-back tail of each training
session), measured every `selectEverySteps` steps. The best measurement's weights are the
ones published. Training has converged after `patience` measurements in a row without a new
best, and no sooner than it has gone on as long again as it took to reach the best.

Why the second condition: the selection loss can stand still for a while before it falls
again, while the policy learns to use the picture (a warehouse job: best at step 1200,
level to 2200, then down by 30% to 4400 as the pallets were learned). A fixed count of
measurements stops such a job on the level, and its model cannot see (docs/learning.md,
"Train while it helps, publish the best"). The wait scales with the job instead of being one
count for every pool; a level longer than the training before it still ends a job.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_IMPROVEMENT = 1e-3
"""A new best must be at least this fraction lower than the old one: noise is not progress."""


@dataclass
class Patience:
    patience: int  # 0: never converges
    best_loss: float = float("inf")
    best_step: int = 0
    measurements: int = 0
    since_best: int = 0
    last_loss: float | None = None

    def observe(self, step: int, loss: float) -> bool:
        """Record one measurement; True when it is a new best (keep these weights)."""
        self.measurements += 1
        self.last_loss = loss
        if loss < self.best_loss * (1 - MIN_IMPROVEMENT):
            self.best_loss, self.best_step, self.since_best = loss, step, 0
            return True
        self.since_best += 1
        return False

    def converged(self) -> bool:
        """`patience` measurements without a new best, and as many as led to the best."""
        to_best = self.measurements - self.since_best
        return self.patience > 0 and self.since_best >= max(self.patience, to_best)
