"""The job's smaller steps: restoring a policy from the resume state."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rovertrain.contracts.command_schema import SLOTS
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.observation import MODEL_CHANNELS, STATE_FEATURES_PER_SLOT
from rovertrain.job.config import load_job_text
from rovertrain.job.state import (
    StartingWeights,
    TrainingState,
    new_footage,
    starting_weights,
)
from rovertrain.job.steps import hyperparameters, optimizer_settings, policy_to_train
from rovertrain.learn.settings import Augmentation, Optimisation
from rovertrain.learn.train import Hyperparameters

HYPER = Hyperparameters(
    Optimisation(
        batchSize=8, passesPerJob=1, maxStepsPerJob=1, learningRate=1e-3, weightDecay=0.01
    ),
    Augmentation(augment=False),
    bf16=False,
)


def _saved_state() -> TrainingState:
    model, optimizer = policy_to_train(TrainingState.fresh(), HYPER, seed=0, resume=True)
    images = torch.zeros(2, MODEL_CHANNELS, 72, 96)
    states = torch.zeros(2, SLOTS * STATE_FEATURES_PER_SLOT)
    logits, values = model(images, states)
    (logits.sum() + values.sum()).backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    state = TrainingState.fresh()
    state.weights = model.state_dict()
    state.optimizer = optimizer.state_dict()
    return state


def test_the_jobs_learning_rate_and_weight_decay_apply_on_resume() -> None:
    saved = _saved_state()
    optimisation = dataclasses.replace(HYPER.optimisation, learningRate=2e-4, weightDecay=0.05)
    changed = dataclasses.replace(HYPER, optimisation=optimisation)
    _, optimizer = policy_to_train(saved, changed, seed=0, resume=True)
    assert {group["lr"] for group in optimizer.param_groups} == {2e-4}
    assert {group["weight_decay"] for group in optimizer.param_groups} == {0.05}
    assert optimizer_settings(optimizer) == {"learningRate": 2e-4, "weightDecay": 0.05}
    # The moments of the saved optimizer are restored, not reset.
    assert any(len(value) for value in optimizer.state.values())


def test_a_fresh_policy_uses_the_jobs_settings() -> None:
    _, optimizer = policy_to_train(TrainingState.fresh(), HYPER, seed=0, resume=True)
    assert optimizer_settings(optimizer) == {"learningRate": 1e-3, "weightDecay": 0.01}


def test_the_jobs_seed_decides_the_initial_weights() -> None:
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first, _ = policy_to_train(TrainingState.fresh(), HYPER, seed=7, resume=True)
    torch.manual_seed(999)  # whatever the process's generator holds
    again, _ = policy_to_train(TrainingState.fresh(), HYPER, seed=7, resume=True)
    other, _ = policy_to_train(TrainingState.fresh(), HYPER, seed=8, resume=True)
    for name, tensor in first.state_dict().items():
        assert torch.equal(tensor, again.state_dict()[name]), name
    assert any(
        not torch.equal(tensor, other.state_dict()[name])
        for name, tensor in first.state_dict().items()
    )
    torch.manual_seed(123)
    policy_to_train(TrainingState.fresh(), HYPER, seed=7, resume=True)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's generator is untouched


def test_the_jobs_settings_reach_training_as_declared() -> None:
    """No re-mapping: training gets the job's own optimisation and augmentation records."""
    text = (
        '{"root": "/r", "config": {"batchSize": 8, "augmentShiftPixels": 2, "precision": "fp32"}}'
    )
    config = load_job_text(text).config
    hyper = hyperparameters(config)
    assert hyper.optimisation is config.optimisation and hyper.augmentation is config.augmentation
    assert hyper.optimisation.batchSize == 8 and hyper.augmentation.augmentShiftPixels == 2
    assert hyper.bf16 is False
    bf16 = load_job_text('{"root": "/r", "config": {"precision": "bf16"}}').config
    assert hyperparameters(bf16).bf16 is True


def test_without_resume_the_weights_and_moments_are_the_seeds_initial_ones() -> None:
    saved = _saved_state()
    initial, _ = policy_to_train(TrainingState.fresh(), HYPER, seed=0, resume=True)
    model, optimizer = policy_to_train(saved, HYPER, seed=0, resume=False)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, initial.state_dict()[name]), name
    assert not any(len(value) for value in optimizer.state.values())
    resumed, _ = policy_to_train(saved, HYPER, seed=0, resume=True)
    assert any(
        not torch.equal(tensor, initial.state_dict()[name])
        for name, tensor in resumed.state_dict().items()
    )


@pytest.mark.parametrize("resume", [True, False])
def test_saved_weights_that_do_not_fit_are_refused_also_when_not_resumed(resume: bool) -> None:
    saved = _saved_state()
    assert saved.weights is not None
    saved.weights = {name: tensor[:1] for name, tensor in saved.weights.items()}
    with pytest.raises(RovertrainError) as refused:
        policy_to_train(saved, HYPER, seed=0, resume=resume)
    assert refused.value.code is ErrorCode.RESUME_INCOMPATIBLE


def test_new_footage_is_a_session_with_windows_the_earlier_jobs_never_read() -> None:
    seen = {"a": 600, "b": 300}
    assert new_footage(seen, {"a": 600, "b": 300}) == []
    assert new_footage(seen, {"a": 600}) == []  # a session left out is not footage
    assert new_footage(seen, {"b": 450, "c": 10, "a": 600}) == ["b", "c"]  # grown, and new


def test_starting_weights_table() -> None:
    assert starting_weights(False, []) is StartingWeights.INITIAL
    assert starting_weights(False, ["c"]) is StartingWeights.INITIAL
    assert starting_weights(True, []) is StartingWeights.RESUMED
    assert starting_weights(True, ["c"]) is StartingWeights.INITIAL_FOR_NEW_FOOTAGE
