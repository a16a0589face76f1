"""The job's evaluation step: held-out figures against the gate, the audits and the probe."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rovertrain.contracts.command_schema import is_stop
from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.dataset import Dataset
from rovertrain.data.partition import Partition
from rovertrain.data.window_set import WindowSet
from rovertrain.gate.imitation import (
    CameraGain,
    GateStatus,
    HeldOutSupport,
    gate_reasons,
    gate_status,
    stop_conditions_apply,
    unevaluated_status,
)
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl
from rovertrain.job.state import TrainingState
from rovertrain.learn.evaluate import (
    BlindScore,
    Scoring,
    blind_score,
    held_out_curve,
    predict,
    score,
)
from rovertrain.learn.losses import LossSetup
from rovertrain.learn.metrics import (
    EventMetrics,
    Interval,
    natural_frequencies,
    scored_slots,
    session_f1_interval,
)
from rovertrain.learn.policy import Policy
from rovertrain.learn.probe import probe
from rovertrain.learn.train import TrainResult, summarise_norms
from rovertrain.protocol.events import EventStream

AUDIT_WINDOWS = 96
PROBE_EVERY_STEPS = 1000
METHOD = "Isolated held-out 100 ms events; no temporal latch or physical rollout"


def scoring_for(job: Job, dataset: Dataset) -> Scoring:
    usable, counts = dataset.natural_command_windows()
    return Scoring(
        schema=dataset.schema,
        threshold=job.actionThreshold,
        frequencies=natural_frequencies(usable, counts),
        batch_size=job.config.optimisation.batchSize,
    )


def held_out_support(dataset: Dataset) -> HeldOutSupport:
    held = dataset.of_partition(Partition.HELD_OUT)
    _, trained_windows = dataset.natural_command_windows()
    stop_slots = [index for index, slot in enumerate(dataset.schema) if is_stop(slot)]
    return HeldOutSupport(
        sessions=len(held),
        unsupported_command_events=sum(r.labels.unsupported_command_events for r in held),
        unsupported_windows=sum(r.labels.unsupported_windows for r in held),
        stops_recorded=any(trained_windows[index] > 0 for index in stop_slots),
        autonomous_windows=sum(r.labels.autonomous_windows for r in held),
    )


@dataclass(frozen=True)
class GateEvaluation:
    """The seed's `evaluation` object: held-out metrics and the imitation gate's verdict."""

    status: GateStatus
    windows: int
    support: HeldOutSupport
    threshold: float
    metrics: EventMetrics | None = None
    reasons: tuple[str, ...] = ()
    blind: BlindScore | None = None
    f1_interval: Interval | None = None  # over held-out sessions; the gate uses the point

    def to_json(self) -> JsonObject:
        unsupported: JsonObject = {
            "unsupportedCommandEvents": self.support.unsupported_command_events,
            "unsupportedWindows": self.support.unsupported_windows,
            "autonomousWindows": self.support.autonomous_windows,
        }
        if self.metrics is None:
            return {"status": self.status, "windows": self.windows, **unsupported}
        return {
            **self.metrics.to_json(),
            "status": self.status,
            **unsupported,
            "method": METHOD,
            "threshold": self.threshold,
            "heldOutSessions": self.support.sessions,
            "f1Interval": self.f1_interval.to_json() if self.f1_interval else None,
            "stopConditionsApplied": stop_conditions_apply(self.metrics, self.support),
            "gateReasons": list(self.reasons),
            **self.camera_json(),
        }

    def camera_json(self) -> JsonObject:
        if self.blind is None:
            return {}
        return {
            "blind": dict(self.blind.to_json()),
            "visionGain": self.blind.vision_gain,
            "changeVisionGain": self.blind.change_gain,
            "valueVisionGain": self.blind.value_gain,
        }


def gate_evaluation(
    model: Policy, dataset: Dataset, job: Job, scoring: Scoring, should_stop: Callable[[], bool]
) -> GateEvaluation:
    held_out = dataset.held_out
    support = held_out_support(dataset)
    threshold = job.actionThreshold
    if not len(held_out) or should_stop():
        status = unevaluated_status(support, len(held_out))
        return GateEvaluation(status, len(held_out), support, threshold)
    predictions = predict(model, held_out, scoring.batch_size, should_stop)
    measured = score(predictions, held_out, scoring)
    blind = blind_score(model, held_out, scoring, measured, should_stop)
    camera = CameraGain(blind.vision_gain, blind.change_gain, blind.value_gain)
    reasons = gate_reasons(measured, job.gate, len(held_out), support, camera)
    done = predictions.done
    interval = session_f1_interval(
        predictions.probabilities[:done] >= threshold,
        held_out.fires[:done].astype(bool),
        held_out.session[:done],
        scored_slots(scoring.schema),
    )
    return GateEvaluation(
        gate_status(reasons),
        len(held_out),
        support,
        threshold,
        measured,
        tuple(reasons),
        blind,
        interval,
    )


def audit_windows(pool: WindowSet) -> WindowSet:
    """A fixed, evenly spread subset of the training pool for the before/after audits."""
    step = max(1, len(pool) // AUDIT_WINDOWS)
    return pool.subset(np.arange(0, len(pool), step)[:AUDIT_WINDOWS])


@dataclass
class TrainingAudit:
    """The seed's training audit: the audit windows before and after, the probe, the inputs."""

    before: EventMetrics
    after: EventMetrics | None = None
    learning_probe: JsonObject | None = None
    probe_seconds: float = 0.0
    extra: JsonObject = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {
            "before": self.before.to_json(),
            "after": self.after.to_json() if self.after is not None else None,
            **self.extra,
            "learningProbe": self.learning_probe,
        }


@dataclass(frozen=True)
class ProbeInputs:
    model: Policy
    windows: WindowSet
    setup: LossSetup
    learning_rate: float
    max_seconds: float


def probe_when_due(
    audit: TrainingAudit, state: TrainingState, inputs: ProbeInputs, control: JobControl, steps: int
) -> None:
    """The learning probe every PROBE_EVERY_STEPS training steps, when time allows."""
    due = state.learning_probe is None or steps - state.last_probe_steps >= PROBE_EVERY_STEPS
    remaining = control.remaining()
    if due and inputs.max_seconds > 0 and not control.should_stop() and remaining > 10:
        started = time.monotonic()
        seconds = min(inputs.max_seconds, remaining / 2)
        i = inputs
        result = probe(i.model, i.windows, i.setup, control.should_stop, seconds, i.learning_rate)
        state.learning_probe = {**result.to_json(), "atTrainingStep": steps}
        state.last_probe_steps = steps
        audit.probe_seconds = time.monotonic() - started
    audit.learning_probe = state.learning_probe


def audit_inputs(
    result: TrainResult, setup: LossSetup, scoring: Scoring, pool: WindowSet
) -> JsonObject:
    """What training saw: gradient norms, BCE weights, natural and sampled frequencies."""
    slots = len(scoring.schema)
    return {
        "gradientNormBeforeClipping": dict(summarise_norms(result.gradient_norms)),
        "positiveWeights": setup.positive_weight[:slots].tolist(),
        "naturalTrainingCommandFrequency": scoring.frequencies[:slots].tolist(),
        "sampledCommandFrequency": pool.fires.mean(axis=0)[:slots].tolist(),
    }


def each_step(*callbacks: Callable[[int], None]) -> Callable[[int], None]:
    def on_step(step: int) -> None:
        for callback in callbacks:
            callback(step)

    return on_step


def periodic_evaluation(
    stream: EventStream,
    every_steps: int,
    model: Policy,
    held_out: WindowSet,
    scoring: Scoring,
    setup: LossSetup,
) -> Callable[[int], None]:
    """Every `every_steps` training steps, an `evaluation` event on the held-out windows."""

    def on_step(step: int) -> None:
        if every_steps and len(held_out) and step % every_steps == 0:
            curve = held_out_curve(model, held_out, scoring, setup)
            stream.emit("evaluation", steps=step, metrics=curve.to_json())

    return on_step
