"""`rovertrain run`: one finite training job, read top to bottom as its named steps."""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rovertrain import __version__
from rovertrain.cli.console import stderr_is_terminal
from rovertrain.errors import RovertrainError
from rovertrain.exitcodes import ExitCode
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl
from rovertrain.job.preflight import check_root_usable
from rovertrain.protocol.events import EventStream

MINUTE_WINDOWS = 600  # 100 ms windows per minute
NICENESS = 10


@dataclass
class TrainingState:
    """What carries over between jobs through the resume file."""

    schema: list[dict[str, Any]]
    steps: int = 0
    examples: int = 0
    last_published: int = 0
    trained_rovers: set[str] = field(default_factory=set)
    control_profiles: list[str] = field(default_factory=list)
    distinct_windows: dict[str, int] = field(default_factory=dict)
    published_windows: int = 0
    last_probe_steps: int = 0
    learning_probe: dict[str, Any] | None = None
    weights: dict[str, Any] | None = None
    optimizer: dict[str, Any] | None = None

    def to_saved(self, weights: dict[str, Any], optimizer: dict[str, Any]) -> dict[str, Any]:
        """The resume file's content (camelCase keys, as the seed's)."""
        return {
            "weights": weights,
            "optimizer": optimizer,
            "schema": self.schema,
            "steps": self.steps,
            "examples": self.examples,
            "lastPublished": self.last_published,
            "trainedRovers": sorted(self.trained_rovers),
            "controlProfiles": self.control_profiles,
            "distinctWindows": self.distinct_windows,
            "publishedWindows": self.published_windows,
            "lastProbeSteps": self.last_probe_steps,
            "learningProbe": self.learning_probe,
        }


def run_job(job: Job, stream: EventStream, progress: bool | None = None) -> int:
    job_id = (
        job.jobId or f"job-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"
    )
    stream.bind_job(job_id)
    root = job.root.resolve()

    # 1. Validate, budget the CPU, lock the root, clean up after crashed jobs, announce.
    check_root_usable(root)
    limit_cpu(job.config.threads)
    from rovertrain.store.durable import JobLock
    from rovertrain.store.publish import remove_stale_staging

    lock = JobLock(root)
    lock.acquire()
    control = JobControl(
        stream, job.config.maxJobSeconds, job.config.stopGraceSeconds,
        job.config.maxPausedSeconds, job.config.heartbeatSeconds,
    )  # fmt: skip
    stream.on_reader_gone = lambda: control.request_stop("Supervisor gone (stdout closed)")
    control.install()
    try:
        job_dir = root / "training" / "jobs" / job_id
        keep_previous_log(job_dir)
        stream.mirror_to(job_dir / "events.ndjson")
        from rovertrain.protocol.evidence import EvidenceWriter

        stream.listeners.append(EvidenceWriter(job_dir))
        show_progress = stderr_is_terminal() if progress is None else progress
        if show_progress:
            from rovertrain.cli.progressview import ProgressView

            stream.listeners.append(ProgressView(len(job.sessions), job.config.maxJobSeconds))
        removed = remove_stale_staging(root)
        stream.emit(
            "started", version=__version__, root=str(root), config=job.config.to_json(),
            gate=job.gate.to_json(), seed=job.seed, sessions=len(job.sessions),
            removedStaging=removed, pid=os.getpid(),
        )  # fmt: skip
        return _run_steps(job, job_id, root, job_dir, stream, control)
    finally:
        control.uninstall()
        lock.release()


def _run_steps(
    job: Job, job_id: str, root: Path, job_dir: Path, stream: EventStream, control: JobControl
) -> int:
    import numpy as np
    import torch

    from rovertrain.data.dataset import DatasetRequest, build_dataset
    from rovertrain.data.partition import processing_order
    from rovertrain.learn.learning import evaluate, loss_setup, probe
    from rovertrain.learn.policy import Policy, parameter_count, specification
    from rovertrain.learn.train import build_optimizer, summarise_norms, train
    from rovertrain.store.publish import new_identity, publish_checkpoint
    from rovertrain.store.resume import load_resume, save_resume

    config = job.config
    cpu_started = time.process_time()

    # 2. Resume state (refused, never silently replaced, when incompatible).
    state = training_state(load_resume(root))

    # 3-4. Partition, decode, label and sample the sessions.
    control.enter("decode")

    def show_decoding(decoding: dict[str, int]) -> None:
        control.activity = ", ".join(f"decoding {sid}: {n} frames" for sid, n in decoding.items())
        control.details = {"decoding": decoding}
        for listener in stream.listeners:
            if hasattr(listener, "show_decoding"):
                listener.show_decoding(decoding)

    order = processing_order(job.sessions, job.seed)
    dataset = build_dataset(
        DatasetRequest(root, order, state.schema, config, job.seed),
        stream, control.should_stop, control.poll_pause, show_decoding,
    )  # fmt: skip
    control.pause_ended()
    pool, validation = dataset.pool, dataset.validation
    diagnostics: dict[str, Any] = {
        "dataset": dataset.rows,
        "decodeSeconds": dataset.decode_seconds,
        "poolBytes": pool.nbytes() + validation.nbytes(),
    }

    # 5. Enough data?
    reason = not_enough_data(len(pool), bool(pool.fires.any()) if len(pool) else False,
                             control.should_stop(), config.minimumSamples)  # fmt: skip
    if reason:
        stream.emit(
            "complete", trained=False, accepted=[], rejected=dataset.rejected,
            samples=len(pool), reason=reason, diagnostics=diagnostics,
            elapsedSeconds=round(control.elapsed(), 3),
        )  # fmt: skip
        return ExitCode.COMPLETED

    # 6. Loss set-up and the audit before training.
    control.enter("train")
    model = Policy().to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    optimizer = build_optimizer(model, config)
    if state.weights is not None:
        try:
            model.load_state_dict(state.weights)
            optimizer.load_state_dict(state.optimizer or {})
        except (RuntimeError, ValueError, KeyError) as error:
            raise RovertrainError(
                "resume_incompatible", "The resume state does not fit this policy.", str(error)
            ) from None
    setup = loss_setup(pool, dataset.schema)
    frequencies = natural_frequencies(dataset.rows)
    audit_windows = pool.subset(np.arange(0, len(pool), max(1, len(pool) // 96))[:96])
    audit_started = time.monotonic()
    before = evaluate(model, audit_windows, dataset.schema, job.actionThreshold, frequencies,
                      config.batchSize)  # fmt: skip
    diagnostics["beforeAuditSeconds"] = round(time.monotonic() - audit_started, 3)

    # 7. Train until the passes end, maxStepsPerJob, the budget or a stop request.
    def periodic_evaluation(step: int) -> None:
        if config.evalEverySteps and len(validation) and step % config.evalEverySteps == 0:
            metrics = held_out_metrics(model, validation, dataset.schema, job.actionThreshold,
                                       frequencies, config.batchSize, setup)  # fmt: skip
            stream.emit("evaluation", steps=step, metrics=metrics)

    result = train(
        model, optimizer, pool, setup, config, control, stream, state.steps, state.examples,
        job.seed, training_deadline(config.maxJobSeconds, len(validation)), periodic_evaluation,
    )  # fmt: skip
    diagnostics.update(trainingSeconds=result.seconds, trainingStoppedBy=result.stopped_by)
    if result.steps == 0:
        stream.emit(
            "complete", trained=False, accepted=[], rejected=dataset.rejected,
            reason="No training steps completed", diagnostics=diagnostics,
            elapsedSeconds=round(control.elapsed(), 3),
        )  # fmt: skip
        return ExitCode.COMPLETED
    steps = state.steps + result.steps
    examples = state.examples + result.examples

    # 8. Evaluate on held-out sessions against the imitation gate; audits and probe.
    control.enter("evaluate")
    evaluation_started = time.monotonic()
    state.distinct_windows.update(dataset.observed_windows)
    evaluation = gate_evaluation(model, dataset, job, frequencies, control.should_stop)
    after = evaluate(model, audit_windows, dataset.schema, job.actionThreshold, frequencies,
                     config.batchSize)  # fmt: skip
    probe_seconds = 0.0
    if not control.should_stop() and (
        state.learning_probe is None or steps - state.last_probe_steps >= 1000
    ):
        remaining = control.remaining()
        if remaining > 10:
            probe_started = time.monotonic()
            state.learning_probe = probe(model, audit_windows, setup, control.should_stop,
                                         min(20.0, remaining / 2), config.learningRate)  # fmt: skip
            state.learning_probe["atTrainingStep"] = steps
            state.last_probe_steps = steps
            probe_seconds = time.monotonic() - probe_started
    diagnostics["trainingAudit"] = {
        "before": before,
        "after": after,
        "gradientNormBeforeClipping": summarise_norms(result.gradient_norms),
        "positiveWeights": setup.positive_weight[: len(dataset.schema)].tolist(),
        "naturalTrainingCommandFrequency": frequencies[: len(dataset.schema)].tolist(),
        "sampledCommandFrequency": pool.fires.mean(axis=0)[: len(dataset.schema)].tolist(),
        "learningProbe": state.learning_probe,
    }
    diagnostics["probeSeconds"] = round(probe_seconds, 3)
    diagnostics["evaluationSeconds"] = round(
        time.monotonic() - evaluation_started - probe_seconds, 3
    )

    # 9. Publication rules.
    stop_label = control.stop_label() or (
        "Job time budget reached" if result.stopped_by == "time budget" else None
    )
    publication = publication_decision(state, steps, evaluation["status"], stop_label, config)
    promote = not publication.pop("blockers")
    state.schema = dataset.schema
    state.trained_rovers |= dataset.trained_rovers
    for profile in dataset.control_profiles:
        if profile not in state.control_profiles:
            state.control_profiles.append(profile)

    # 10. Stage and publish the candidate, then save the resume state.
    control.enter("publish")
    save_started = time.monotonic()
    model_id, name = new_identity()
    weights = {key: value.contiguous() for key, value in model.state_dict().items()}
    metadata = {
        "id": model_id, "name": name, "createdAt": int(time.time() * 1000), "jobId": job_id,
        "seed": job.seed, "trainingSteps": steps, "examplesProcessed": examples,
        "parameters": parameter_count(model), "specification": specification(dataset.schema),
        "trainedRovers": sorted(state.trained_rovers), "controlProfiles": state.control_profiles,
        "sourceSessions": dataset.accepted, "trainingLoss": sum(result.losses) / len(result.losses),
        "evaluation": evaluation["status"], "validation": evaluation,
        "distinctMinutes": publication["distinctMinutes"], "promote": promote,
        "publication": publication, "dtype": "float32", "torchVersion": str(torch.__version__),
        "rovertrainVersion": __version__, "config": config.to_json(), "gate": job.gate.to_json(),
    }  # fmt: skip
    published = publish_checkpoint(root, model_id, weights, metadata)
    checkpoint_path = root / "training" / "checkpoints" / model_id
    stream.emit("published", id=model_id, name=name, path=str(checkpoint_path), promote=promote)
    if promote:
        state.last_published = steps
        state.published_windows = sum(state.distinct_windows.values())
    state.steps, state.examples = steps, examples
    save_resume(root, state.to_saved(model.state_dict(), optimizer.state_dict()))
    diagnostics.update(
        checkpointSeconds=round(time.monotonic() - save_started, 3),
        cpuSeconds=round(time.process_time() - cpu_started, 3),
        peakRssMiB=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        dependencies={"torch": str(torch.__version__), "numpy": str(np.__version__)},
        policy=specification(dataset.schema),
    )

    # 11. The terminal event.
    stream.emit(
        "complete", trained=True, accepted=dataset.accepted, rejected=dataset.rejected,
        steps=steps, examples=examples, loss=sum(result.losses) / len(result.losses),
        published=published, promote=promote, publication=publication, evaluation=evaluation,
        diagnostics=diagnostics, elapsedSeconds=round(control.elapsed(), 3),
    )  # fmt: skip
    return ExitCode.COMPLETED


def held_out_metrics(
    model: Any, validation: Any, schema: Any, threshold: float, frequencies: Any,
    batch_size: int, setup: Any,
) -> dict[str, Any]:  # fmt: skip
    """The learning curve on unseen sessions: the gate's figures plus the held-out loss."""
    import torch

    from rovertrain.learn.learning import batch_tensors, evaluate, losses

    measured = evaluate(model, validation, schema, threshold, frequencies, batch_size)
    model.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for start in range(0, len(validation), 512):
            batch = batch_tensors(validation, slice(start, start + 512))
            logits, values = model(batch.images.contiguous(memory_format=torch.channels_last),
                                   batch.states)  # fmt: skip
            event_loss, value_loss = losses(logits, values, batch, setup)
            total += float(event_loss + value_loss) * len(batch.fires)
            count += len(batch.fires)
    model.train()
    keys = ("precision", "recall", "f1", "stopRecall", "movementRecall", "numericMse", "windows")
    return {**{key: measured[key] for key in keys}, "heldOutLoss": total / max(1, count)}


def keep_previous_log(job_dir: Path) -> None:
    """A rerun under the same jobId starts a fresh log; the earlier one is kept beside it."""
    log = job_dir / "events.ndjson"
    if not log.exists():
        return
    number = 1
    while (job_dir / f"events.{number}.ndjson").exists():
        number += 1
    log.rename(job_dir / f"events.{number}.ndjson")


def limit_cpu(threads: int) -> None:
    """Yield the CPU to the rover's media processes, before any thread pool exists."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)
    current = os.nice(0)
    if current < NICENESS:
        os.nice(NICENESS - current)
    import torch

    torch.set_num_threads(threads)
    # Raises when already set in this process (several jobs in one interpreter).
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)


def gate_evaluation(
    model: Any, dataset: Any, job: Job, frequencies: Any, should_stop: Any
) -> dict[str, Any]:
    """Held-out metrics and the imitation gate's verdict (the seed's `evaluation` object)."""
    from rovertrain.learn.learning import evaluate
    from rovertrain.learn.metrics import gate_reasons

    validation = dataset.validation
    held_rows = [row for row in dataset.rows if row["partition"] == "heldOut"]
    unsupported = {
        "unsupportedCommandEvents": sum(r.get("unsupportedCommandEvents", 0) for r in held_rows),
        "unsupportedWindows": sum(r.get("unsupportedWindows", 0) for r in held_rows),
    }
    if not len(validation) or should_stop():
        status = (
            "No supported held-out windows"
            if unsupported["unsupportedCommandEvents"] and not len(validation)
            else "waiting for held-out sessions"
        )
        return {"status": status, "windows": len(validation), **unsupported}
    measured = evaluate(model, validation, dataset.schema, job.actionThreshold, frequencies,
                        job.config.batchSize, should_stop)  # fmt: skip
    reasons = gate_reasons(measured, job.gate, len(validation), len(held_rows),
                           unsupported["unsupportedCommandEvents"])  # fmt: skip
    return {
        **measured,
        "status": "imitation gate not met" if reasons else "passed imitation gate",
        **unsupported,
        "method": "Isolated held-out 100 ms events; no temporal latch or physical rollout",
        "threshold": job.actionThreshold,
        "heldOutSessions": len(held_rows),
        "gateReasons": reasons,
    }


def publication_decision(
    state: TrainingState, steps: int, status: str, stop_label: str | None, config: Any
) -> dict[str, Any]:
    """The seed's publication figures and reason; `blockers` lists why not to promote."""
    from rovertrain.learn.metrics import publication_reasons

    unique_windows = sum(state.distinct_windows.values())
    publication: dict[str, Any] = {
        "distinctMinutes": unique_windows / MINUTE_WINDOWS,
        "newMinutes": (unique_windows - state.published_windows) / MINUTE_WINDOWS,
        "minimumMinutes": config.minimumDrivingMinutes,
        "requiredNewMinutes": config.newDrivingMinutesPerModel,
    }
    blockers = publication_reasons(
        publication["distinctMinutes"], publication["newMinutes"], steps - state.last_published,
        status, stop_label, config,
    )  # fmt: skip
    publication["reason"] = "; ".join(blockers) or "Latest updated"
    publication["blockers"] = blockers
    return publication


def training_state(saved: dict[str, Any] | None) -> TrainingState:
    from rovertrain.data.command_schema import initial_schema

    if saved is None:
        return TrainingState(schema=initial_schema())
    return TrainingState(
        schema=saved["schema"],
        steps=saved["steps"],
        examples=saved["examples"],
        last_published=saved["lastPublished"],
        trained_rovers=set(saved.get("trainedRovers", [])),
        control_profiles=list(saved.get("controlProfiles", [])),
        distinct_windows=dict(saved.get("distinctWindows", {})),
        published_windows=saved["publishedWindows"],
        last_probe_steps=saved.get("lastProbeSteps", 0),
        learning_probe=saved.get("learningProbe"),
        weights=saved["weights"],
        optimizer=saved["optimizer"],
    )


def not_enough_data(samples: int, any_command: bool, stopped: bool, minimum: int) -> str | None:
    if stopped:
        return "Stopped/time limit"
    if samples < minimum or not any_command:
        return "Waiting for enough training-partition samples with human actions"
    return None


def natural_frequencies(rows: list[dict[str, Any]]) -> Any:
    import numpy as np

    from rovertrain.data.command_schema import SLOTS

    training = [row for row in rows if row["partition"] == "training"]
    usable = sum(row.get("usableWindows", 0) for row in training)
    counts = np.zeros(SLOTS)
    for row in training:
        counts += np.asarray(row.get("commandEventCounts", [0] * SLOTS), dtype=np.float64)
    return counts / max(1, usable)


def training_deadline(max_seconds: float, held_out_windows: int) -> float:
    """When training must stop so evaluation and publication still fit in the budget."""
    reserve = min(max_seconds * 0.25, 3.0 + held_out_windows * 0.002)
    return max_seconds - reserve
