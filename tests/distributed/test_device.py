"""`config.device`: the CPU by default; CUDA only where torch sees a GPU (tests skip without)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rovertrain.contracts.errors import ErrorCode, InvalidJob
from rovertrain.distributed.rank_place import ONE_PROCESS, RankPlace
from rovertrain.job.config import Config, load_job_text
from rovertrain.job.ranks import resolve_device

NO_GPU = not torch.cuda.is_available()


def config_of(**config: object) -> Config:
    return load_job_text(json.dumps({"root": "/r", "config": config})).config


def test_the_device_is_the_cpu_unless_the_job_says_otherwise() -> None:
    execution = config_of().execution
    assert execution.device == "cpu" and execution.rankTimeoutSeconds == 300
    assert resolve_device("cpu", ONE_PROCESS) == torch.device("cpu")


def test_an_unknown_device_names_the_field() -> None:
    with pytest.raises(InvalidJob) as caught:
        config_of(device="tpu")
    assert caught.value.pointer == "/config/device" and "tpu" in caught.value.message


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_refused() -> None:
    assert resolve_device("auto", RankPlace(rank=1, size=2, local_rank=1)) == torch.device("cpu")
    with pytest.raises(InvalidJob) as caught:
        resolve_device("cuda", ONE_PROCESS)
    assert caught.value.code is ErrorCode.INVALID_JOB and caught.value.pointer == "/config/device"


@pytest.mark.skipif(NO_GPU, reason="needs a CUDA device")
def test_each_local_rank_gets_a_gpu_of_its_own() -> None:
    count = torch.cuda.device_count()
    for local in range(count):
        device = resolve_device("cuda", RankPlace(rank=local, size=count + 1, local_rank=local))
        assert device == torch.device("cuda", local)
    with pytest.raises(InvalidJob):  # NCCL cannot put two ranks on one GPU
        resolve_device("cuda", RankPlace(rank=count, size=count + 1, local_rank=count))
    assert resolve_device("auto", ONE_PROCESS).type == "cuda"


@pytest.mark.skipif(NO_GPU, reason="needs a CUDA device")
def test_training_on_cuda_takes_the_same_steps_and_returns_a_cpu_policy() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "learn"))
    from windows_fixture import learnable_windows

    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.job.ranks import one_process
    from rovertrain.learn.evaluate import Scoring, evaluate
    from rovertrain.learn.losses import loss_setup
    from rovertrain.learn.metrics import natural_frequencies
    from rovertrain.learn.policy import Policy
    from rovertrain.learn.settings import Augmentation, Optimisation
    from rovertrain.learn.train import Hyperparameters, TrainingPlan, build_optimizer, train

    config = config_of(device="cuda")
    ranks = one_process(config.execution)
    assert ranks.device.type == "cuda"
    pool = learnable_windows(64)
    optimisation = Optimisation(
        batchSize=16, passesPerJob=2, maxStepsPerJob=1000, learningRate=0.003, weightDecay=0.0
    )
    augmentation = Augmentation(
        augment=True, augmentColour=0.0, augmentShiftPixels=0, hideNeverSent=1.0
    )
    hyper = Hyperparameters(optimisation, augmentation, bf16=True)
    model = Policy()
    optimizer = build_optimizer(model, optimisation)
    setup = ranks.place(model, optimizer, loss_setup(pool, initial_schema()))
    assert next(model.parameters()).is_cuda and setup.slot_mask.is_cuda

    class Control:
        activity = ""

        def safe_point(self) -> None: ...
        def stop_requested(self) -> bool:
            return False

        def elapsed(self) -> float:
            return 0.0

        def remaining(self) -> float:
            return 1e9

    plan = TrainingPlan(pool, setup, hyper, 0, 0, 0, 1e9, ranks.share())
    result = train(model, optimizer, plan, Control(), lambda progress: None)
    assert result.steps == 8 and all(torch.isfinite(torch.tensor(result.losses)))
    schema = initial_schema()
    scoring = Scoring(schema, 0.5, natural_frequencies(64, pool.fires.sum(axis=0)), 16)
    on_gpu = evaluate(model, pool, scoring)
    ranks.to_cpu(model, optimizer)
    assert not next(model.parameters()).is_cuda
    assert evaluate(model, pool, scoring).windows == on_gpu.windows
