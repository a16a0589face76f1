"""The publish step: stage the candidate checkpoint, then carry the state to the next job."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from rovertrain import __version__
from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.dataset import Dataset
from rovertrain.gate.publication import PublicationDecision
from rovertrain.job.config import Job
from rovertrain.job.evaluation import GateEvaluation
from rovertrain.job.resume import save_resume
from rovertrain.job.state import TrainingState
from rovertrain.learn.event_weights import event_weights, event_weights_json
from rovertrain.learn.policy import Policy, parameter_count, specification
from rovertrain.learn.resends import resend_after_ms, resend_json
from rovertrain.store.current import write_current
from rovertrain.store.layout import Layout
from rovertrain.store.publish import new_identity, publish_checkpoint


@dataclass(frozen=True)
class Candidate:
    """A trained model and everything its model.json says about it."""

    job_id: str
    job: Job
    dataset: Dataset
    steps: int
    examples: int
    training_loss: float
    evaluation: GateEvaluation
    decision: PublicationDecision


@dataclass(frozen=True)
class Published:
    id: str
    name: str
    path: Path
    document: JsonObject  # model.json as written


def published_specification(dataset: Dataset, model: Policy) -> JsonObject:
    """The policy's specification as model.json holds it: with the value levels it was
    trained with, how soon the person re-sent a command, and how the event loss weighed the
    windows where a type fires (docs/learning.md)."""
    training, schema = dataset.training, dataset.schema
    after = resend_after_ms(training.states, training.fires, training.values, training.available)
    return specification(
        schema,
        model.value_levels(),
        resend_json(after, schema),
        event_weights_json(event_weights(training.fires), schema),
    )


def model_metadata(
    candidate: Candidate, state: TrainingState, model: Policy, model_id: str, name: str
) -> JsonObject:
    """model.json's content (store.publish adds the files)."""
    job, dataset = candidate.job, candidate.dataset
    return {
        "id": model_id,
        "name": name,
        "createdAt": int(time.time() * 1000),
        "jobId": candidate.job_id,
        "seed": job.seed,
        "trainingSteps": candidate.steps,
        "examplesProcessed": candidate.examples,
        "parameters": parameter_count(model),
        "specification": published_specification(dataset, model),
        **job.decision.to_json(),
        "trainedRovers": list(sorted(state.trained_rovers)),
        "controlProfiles": list(state.control_profiles),
        "sourceSessions": list(dataset.accepted),
        # How earlier models drove in the field: the supervised sessions among these, pooled
        # per model that drove them (docs/simulator.md, "Supervised driving").
        "field": {
            model: figures.event_fields() for model, figures in dataset.field_by_model().items()
        },
        "trainingLoss": candidate.training_loss,
        "evaluation": candidate.evaluation.status,
        "validation": candidate.evaluation.to_json(),
        "distinctMinutes": candidate.decision.distinct_minutes,
        "promote": candidate.decision.promote,
        "publication": candidate.decision.to_json(),
        "dtype": "float32",
        "torchVersion": str(torch.__version__),
        "rovertrainVersion": __version__,
        "config": job.config.to_json(),
        "gate": job.gate.to_json(),
    }


def publish(root: Path, candidate: Candidate, state: TrainingState, model: Policy) -> Published:
    """Write the immutable checkpoint (and, if promoted, current.json); the caller announces it."""
    model_id, name = new_identity()
    weights = {key: value.contiguous() for key, value in model.state_dict().items()}
    metadata = model_metadata(candidate, state, model, model_id, name)
    document = publish_checkpoint(root, model_id, weights, metadata)
    if candidate.decision.promote:
        write_current(root, model_id, name)
    return Published(model_id, name, Layout(root).checkpoint(model_id), document)


def carry_over(
    root: Path,
    state: TrainingState,
    candidate: Candidate,
    model: Policy,
    optimizer: torch.optim.Optimizer,
) -> None:
    """Update the counters for the next job and save the resume state atomically."""
    decision = candidate.decision
    if decision.promote or (decision.canary and not decision.blockers):  # a canary counts
        state.last_published = candidate.steps
        state.published_windows = state.distinct_window_count()
    state.steps, state.examples = candidate.steps, candidate.examples
    state.weights, state.optimizer = model.state_dict(), optimizer.state_dict()
    save_resume(root, state.to_saved())
