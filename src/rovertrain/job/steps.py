"""The run's smaller steps: restoring the policy, reporting progress, ending untrained."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.job.config import Config
from rovertrain.job.control import JobControl
from rovertrain.protocol.events import EventStream

if TYPE_CHECKING:
    import torch

    from rovertrain.data.dataset import Dataset
    from rovertrain.job.diagnostics import JobDiagnostics
    from rovertrain.job.publication import Candidate, Published
    from rovertrain.job.state import TrainingState
    from rovertrain.learn.policy import Policy
    from rovertrain.learn.settings import Optimisation
    from rovertrain.learn.train import Hyperparameters, TrainingProgress


def finish_untrained(
    stream: EventStream,
    control: JobControl,
    dataset: Dataset,
    diagnostics: JobDiagnostics,
    reason: str,
    **extra: int,
) -> int:
    """The terminal event of a job that trained nothing (not enough data, no step)."""
    stream.emit(
        "complete",
        trained=False,
        accepted=[],
        rejected=dataset.rejected,
        **extra,
        reason=reason,
        diagnostics=diagnostics.to_json(),
        elapsedSeconds=round(control.elapsed(), 3),
    )
    return ExitCode.COMPLETED


def uses_bf16(precision: str, device_type: str = "cpu") -> bool:
    """`auto`: bf16 only where the device computes it natively (measured: emulated bf16 on an
    AVX2-only CPU trains 1.7x slower than fp32; bench/bench_training.py). On CUDA: where the
    GPU supports bf16 (Ampere and later)."""
    if precision != "auto":
        return precision == "bf16"
    import torch

    if device_type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return torch.backends.cpu.get_cpu_capability() not in ("DEFAULT", "AVX2")


def hyperparameters(config: Config, device_type: str = "cpu") -> Hyperparameters:
    from rovertrain.learn.train import Hyperparameters

    optimisation = config.optimisation
    bf16 = uses_bf16(optimisation.precision, device_type)
    return Hyperparameters(optimisation, config.augmentation, bf16)


def policy_to_train(
    state: TrainingState, hyper: Hyperparameters, seed: int, *, resume: bool
) -> tuple[Policy, torch.optim.Optimizer]:
    """The policy this job trains and its optimizer: fresh (initial weights drawn from the
    job's `seed`) or, with `resume`, the resume state's. Saved weights that do not fit the policy are refused either
    way: a job never silently replaces a state it cannot read."""
    import torch

    from rovertrain.learn.policy import Policy
    from rovertrain.learn.train import build_optimizer

    # torch seeds its global generator differently in every process: without this, two runs
    # of the same job started from different weights (2026-12-01: F1 0.47 vs 0.67 after 45
    # steps). fork_rng leaves the caller's generator as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = Policy()
    model = fresh.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    optimizer = build_optimizer(model, hyper.optimisation)
    if state.weights is None:
        return model, optimizer
    # Starting over, the saved weights are still loaded once: a state that does not fit is
    # refused, never silently replaced; then the initial ones go back.
    initial = None if resume else {k: v.clone() for k, v in model.state_dict().items()}
    try:
        model.load_state_dict(state.weights)
        if resume:
            optimizer.load_state_dict(state.optimizer or {})
    except (RuntimeError, ValueError, KeyError) as error:
        raise RovertrainError(
            ErrorCode.RESUME_INCOMPATIBLE,
            "The resume state does not fit this policy.",
            str(error),
        ) from None
    if initial is not None:
        model.load_state_dict(initial)
        return model, optimizer
    # load_state_dict restores the saved job's learning rate and weight decay; this job's
    # settings are the ones it reports, so they are the ones it must use.
    apply_optimisation(optimizer, hyper.optimisation)
    return model, optimizer


def apply_optimisation(optimizer: torch.optim.Optimizer, optimisation: Optimisation) -> None:
    for group in optimizer.param_groups:
        group["lr"] = optimisation.learningRate
        group["weight_decay"] = optimisation.weightDecay


def optimizer_settings(optimizer: torch.optim.Optimizer) -> dict[str, float]:
    """What the optimizer actually uses (`diagnostics.optimizer`)."""
    group = optimizer.param_groups[0]
    return {"learningRate": float(group["lr"]), "weightDecay": float(group["weight_decay"])}


def progress_reporter(
    stream: EventStream, control: JobControl
) -> Callable[[TrainingProgress], None]:
    def report(progress: TrainingProgress) -> None:
        stream.emit(
            "progress",
            steps=progress.steps,
            examples=progress.examples,
            loss=progress.loss,
            losses={"events": progress.event_loss, "commandValues": progress.value_loss},
            examplesPerSecond=progress.examples_per_second,
            elapsedSeconds=round(control.elapsed(), 3),
            remainingSeconds=round(max(0.0, control.remaining()), 3),
        )

    return report


def announce_published(stream: EventStream, published: Published, promote: bool) -> None:
    stream.emit(
        "published",
        id=published.id,
        name=published.name,
        path=str(published.path),
        promote=promote,
    )


def finish_trained(
    stream: EventStream,
    control: JobControl,
    candidate: Candidate,
    published: Published,
    diagnostics: JobDiagnostics,
) -> int:
    """The terminal event of a job that trained and published a candidate."""
    dataset, decision = candidate.dataset, candidate.decision
    stream.emit(
        "complete",
        trained=True,
        accepted=dataset.accepted,
        rejected=dataset.rejected,
        steps=candidate.steps,
        examples=candidate.examples,
        loss=candidate.training_loss,
        published=published.document,
        promote=decision.promote,
        publication=decision.to_json(),
        evaluation=candidate.evaluation.to_json(),
        diagnostics=diagnostics.to_json(),
        elapsedSeconds=round(control.elapsed(), 3),
    )
    return ExitCode.COMPLETED
