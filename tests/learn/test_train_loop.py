"""The training loop alone: stop predicates, counters, progress and non-finite losses."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch
from windows_fixture import learnable_windows

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.learn.losses import loss_setup
from rovertrain.learn.policy import Policy
from rovertrain.learn.settings import Augmentation, Optimisation
from rovertrain.learn.train import (
    PROGRESS_EVERY,
    Hyperparameters,
    StopCause,
    TrainingPlan,
    TrainingProgress,
    build_optimizer,
    train,
)

OPTIMISATION = Optimisation(
    batchSize=16, passesPerJob=2, maxStepsPerJob=1000, learningRate=0.003, weightDecay=0.0
)
# Brightness and contrast only: no colour gain, shift or state-vector redraws.
AUGMENTATION = Augmentation(
    augment=True,
    augmentColour=0.0,
    augmentShiftPixels=0,
    valueHistoryDropout=0.0,
    hideNeverSent=0.0,
)
HYPER = Hyperparameters(OPTIMISATION, AUGMENTATION, bf16=False)


def hyper_with(**optimisation: int) -> Hyperparameters:
    return replace(HYPER, optimisation=replace(OPTIMISATION, **optimisation))


@dataclass
class FakeControl:
    """A lifecycle whose clock and stop flag the test sets."""

    stop_after_safe_points: int | None = None
    clock: float = 0.0
    safe_points: int = 0
    activity: str = ""

    def safe_point(self) -> None:
        self.safe_points += 1
        self.clock += 1.0

    def stop_requested(self) -> bool:
        limit = self.stop_after_safe_points
        return limit is not None and self.safe_points > limit

    def elapsed(self) -> float:
        return self.clock

    def remaining(self) -> float:
        return 1000 - self.clock


def plan(count: int = 64, hyper: Hyperparameters = HYPER, deadline: float = 1e9) -> TrainingPlan:
    pool = learnable_windows(count)
    return TrainingPlan(pool, loss_setup(pool, initial_schema()), hyper, 0, 100, 6400, deadline)


def run(training: TrainingPlan, control: FakeControl) -> tuple[object, list[TrainingProgress]]:
    torch.manual_seed(0)
    model = Policy()
    reports: list[TrainingProgress] = []
    result = train(
        model,
        build_optimizer(model, training.hyper.optimisation),
        training,
        control,
        reports.append,
    )
    return result, reports


def test_all_passes_run_and_counters_continue_from_the_resume_state() -> None:
    result, reports = run(plan(count=64), FakeControl())
    assert result.stopped_by is StopCause.PASSES_COMPLETED
    assert result.steps == 2 * (64 // 16) and result.examples == 2 * 64
    assert all(torch.isfinite(torch.tensor(result.losses)))
    assert len(result.gradient_norms) == result.steps
    assert reports == []  # fewer than PROGRESS_EVERY steps


def test_progress_every_ten_steps_counts_from_the_resumed_step() -> None:
    hyper = hyper_with(passesPerJob=8)
    result, reports = run(plan(count=64, hyper=hyper), FakeControl())
    assert result.steps == 32
    # resumed at step 100: reports at 110, 120, 130
    assert [r.steps for r in reports] == [100 + PROGRESS_EVERY * k for k in (1, 2, 3)]
    assert reports[0].examples == 6400 + 10 * 16
    assert reports[-1].loss == pytest.approx(result.losses[29])


@pytest.mark.parametrize(
    ("control", "hyper", "deadline", "cause", "steps"),
    [
        (FakeControl(stop_after_safe_points=3), HYPER, 1e9, StopCause.STOP_REQUESTED, 3),
        (FakeControl(), HYPER, 2.5, StopCause.TIME_BUDGET, 2),
        (FakeControl(), hyper_with(maxStepsPerJob=5), 1e9, StopCause.MAX_STEPS, 5),
    ],
)
def test_named_stop_predicates(
    control: FakeControl, hyper: Hyperparameters, deadline: float, cause: StopCause, steps: int
) -> None:
    result, _ = run(plan(hyper=hyper, deadline=deadline), control)
    assert result.stopped_by is cause and result.steps == steps


def test_training_stops_when_it_has_converged() -> None:
    torch.manual_seed(0)
    training = plan(hyper=hyper_with(passesPerJob=100))
    model = Policy()
    seen: list[int] = []
    result = train(
        model,
        build_optimizer(model, training.hyper.optimisation),
        training,
        FakeControl(),
        lambda progress: None,
        seen.append,
        converged=lambda: len(seen) >= 6,
    )
    assert result.stopped_by is StopCause.CONVERGED and result.steps == 6
    assert StopCause.CONVERGED.publication_blocker() is None


def test_training_fits_a_learnable_pool() -> None:
    hyper = replace(hyper_with(passesPerJob=15), augmentation=replace(AUGMENTATION, augment=False))
    result, _ = run(plan(count=64, hyper=hyper), FakeControl())
    first, last = sum(result.losses[:4]) / 4, sum(result.losses[-4:]) / 4
    assert last < first * 0.5


def test_a_non_finite_loss_is_an_error_not_a_model() -> None:
    training = plan()
    training.pool.states[:] = float("nan")
    with pytest.raises(RovertrainError) as raised:
        run(training, FakeControl())
    assert raised.value.code is ErrorCode.NON_FINITE_LOSS
    assert StopCause.TIME_BUDGET.publication_blocker() == "Job time budget reached"
    assert StopCause.MAX_STEPS.publication_blocker() is None
