"""Two gloo ranks under DDP, each on its share of every batch, train the same weights as one
process on whole batches (the batch size is global; augmentation, value-history dropout and
never-sent redraws stay in step); a non-finite loss on one rank fails every rank at the same
step."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from windows_fixture import learnable_windows

from rovertrain.contracts.command_schema import SLOTS, initial_schema
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.learn.losses import loss_setup
from rovertrain.learn.policy import Policy
from rovertrain.learn.settings import Augmentation, Optimisation
from rovertrain.learn.train import (
    NON_FINITE_LOSS,
    BatchShare,
    Hyperparameters,
    TrainingPlan,
    WholeBatch,
    build_optimizer,
    train,
)
from rovertrain.runtime.state import LONG_RAMP

sys.path.insert(0, str(Path(__file__).parents[1] / "distributed"))
from gloo import join, run_ranks

HYPER = Hyperparameters(
    Optimisation(
        batchSize=16, passesPerJob=1, maxStepsPerJob=4, learningRate=0.003, weightDecay=0.01
    ),
    Augmentation(
        augment=True,
        augmentColour=0.2,
        augmentShiftPixels=3,
        valueHistoryDropout=0.3,
        hideNeverSent=1.0,
    ),
    bf16=False,
)


class Unhurried:
    activity = ""

    def safe_point(self) -> None:
        pass

    def stop_requested(self) -> bool:
        return False

    def elapsed(self) -> float:
        return 0.0

    def remaining(self) -> float:
        return 1e9


def training_plan(share: BatchShare) -> TrainingPlan:
    pool = learnable_windows(64, seed=4)
    # No numeric values: the value loss is normalised per rank by its own count of values,
    # which is the one place where two shares differ from the whole batch.
    pool.available[:] = 0
    # Half the examples show every type silent for 10 s or more: the never-sent redraw acts.
    pool.states.reshape(len(pool), SLOTS, -1)[::2, :, LONG_RAMP] = 1.0
    setup = loss_setup(pool, initial_schema())
    return TrainingPlan(pool, setup, HYPER, 5, 0, 0, 1e9, share)


def initial_policy() -> Policy:
    torch.manual_seed(0)
    return Policy()


def weights_after_training(
    share: BatchShare, wrap: Callable[[Policy], Policy] = lambda model: model
) -> dict[str, torch.Tensor]:
    model = initial_policy()
    optimizer = build_optimizer(model, HYPER.optimisation)
    train(wrap(model), optimizer, training_plan(share), Unhurried(), lambda progress: None)
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def _rank(rank: int, ranks: int, port: int, out: Path) -> None:
    from torch.nn.parallel import DistributedDataParallel

    from rovertrain.job.ranks import RankShare

    torch.set_num_threads(1)
    join(rank, ranks, port, timeout=60)
    share = RankShare(rank, ranks, torch.device("cpu"))
    weights = weights_after_training(share, DistributedDataParallel)  # type: ignore[arg-type]
    if rank == 0:
        torch.save(weights, out / "weights.pt")
    (out / f"rank{rank}.json").write_text(str(share.examples))


def test_two_ranks_train_what_one_process_trains(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    alone = weights_after_training(WholeBatch())
    examples = run_ranks(_rank, tmp_path)
    assert examples == [32, 32]  # 4 steps of 16 examples, 8 on each rank
    together = torch.load(tmp_path / "weights.pt", weights_only=True)
    initial = initial_policy().state_dict()
    assert any(not torch.equal(initial[name], value) for name, value in alone.items())
    for name, value in alone.items():
        np.testing.assert_allclose(together[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-5)


def _non_finite_on_rank_1(rank: int, ranks: int, port: int, out: Path) -> None:
    from torch.nn.parallel import DistributedDataParallel

    from rovertrain.job.ranks import RankShare

    torch.set_num_threads(1)
    # Short: a rank left waiting in the gradient all-reduce fails soon (`rank_failed`).
    group = join(rank, ranks, port, timeout=15)
    plan = training_plan(RankShare(rank, ranks, torch.device("cpu")))
    if rank == 1:
        plan.pool.states[:] = float("nan")  # rank 1 alone computes a NaN loss
    model = initial_policy()
    outcome: dict[str, str] = {}
    try:
        with group.guard():
            train(
                DistributedDataParallel(model),  # type: ignore[arg-type]
                build_optimizer(model, HYPER.optimisation), plan, Unhurried(), lambda progress: None,
            )  # fmt: skip
    except RovertrainError as error:
        outcome = {"code": error.code.value, "message": error.message, "detail": error.detail}
    (out / f"rank{rank}.json").write_text(json.dumps(outcome))


def test_a_non_finite_loss_on_one_rank_fails_every_rank_at_that_step(tmp_path: Path) -> None:
    zero, one = run_ranks(_non_finite_on_rank_1, tmp_path)
    assert zero["code"] == one["code"] == ErrorCode.NON_FINITE_LOSS  # not rank_failed
    assert one["message"] == NON_FINITE_LOSS and one["detail"] == "step 1: loss nan"
    assert zero["detail"] == "step 1: gradient norm nan"  # the same step, through DDP
