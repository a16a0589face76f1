"""`rovertrain run`: one finite training job, read top to bottom as its named steps.

Every step's detail lives in its own module: data/ (decode, label, sample), learn/ (policy,
loop, evaluation), gate/ (the rules), store/ (checkpoints, resume), job/ (lifecycle).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl, Phase
from rovertrain.job.preflight import (
    check_root_usable,
    job_curation,
    job_sessions,
    with_curation,
    with_sessions,
)
from rovertrain.job.ranks import Ranks, join_ranks, one_process
from rovertrain.job.startup import (
    JobWatcher,
    announce,
    job_control,
    limit_cpu,
    new_job_id,
    open_job_log,
)
from rovertrain.job.steps import (
    announce_published,
    finish_trained,
    finish_untrained,
    hyperparameters,
    optimizer_settings,
    policy_to_train,
    progress_reporter,
)
from rovertrain.protocol.events import EventStream
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    import torch

    from rovertrain.data.dataset import Dataset
    from rovertrain.data.window_set import WindowSet
    from rovertrain.gate.publication import PublicationDecision
    from rovertrain.job.diagnostics import JobDiagnostics
    from rovertrain.job.evaluation import GateEvaluation, TrainingAudit
    from rovertrain.job.publication import Candidate, Published
    from rovertrain.job.state import TrainingState
    from rovertrain.learn.evaluate import Scoring
    from rovertrain.learn.losses import LossSetup
    from rovertrain.learn.policy import Policy
    from rovertrain.learn.selection import BestWeights
    from rovertrain.learn.train import Hyperparameters, TrainResult


def run_job(job: Job, stream: EventStream, watchers: Sequence[JobWatcher] = ()) -> int:
    job_id = job.jobId or new_job_id()
    stream.bind_job(job_id)
    root = job.root.resolve()

    # 1. Validate, read curation.json (once: a later write is the next job's), budget the
    #    CPU, join the other ranks (if a launcher started several), lock the root, clean up
    #    after crashed jobs, announce. Rank 0 alone locks, cleans, announces.
    check_root_usable(root)
    job = with_curation(with_sessions(job, root), root)
    limit_cpu(job.config.execution.threads)
    ranks = join_ranks(job.config.execution)
    try:
        job, job_id = ranks.agree_job(job, job_id)  # rank 0's sessions and curation
        stream.bind_job(job_id)
        from rovertrain.store.publish import remove_stale_staging

        lock = ranks.root_lock(root)
        lock.acquire()
        control = job_control(job.config.budget, stream, watchers)
        try:
            if ranks.leads:
                open_job_log(Layout(root).job(job_id).path, stream, watchers)
                removed = remove_stale_staging(root)
                announce(job, root, stream, removed, ranks.size)
            ranks.started()
            return run_steps(job, job_id, root, stream, control, ranks)
        finally:
            control.uninstall()
            lock.release()
    finally:
        ranks.close()


@dataclass(frozen=True)
class JobRun:
    """What every step of one job works with."""

    job: Job
    job_id: str
    root: Path
    stream: EventStream
    control: JobControl
    ranks: Ranks
    state: TrainingState  # the resume state: read at step 2, updated and saved at step 9
    diagnostics: JobDiagnostics


@dataclass(frozen=True)
class Trainee:
    """The policy about to train (step 5), and what measures it before and after."""

    model: Policy
    optimizer: torch.optim.Optimizer
    hyper: Hyperparameters
    setup: LossSetup  # the loss weights, on the CPU (evaluation)
    placed_setup: LossSetup  # the same on this rank's device (training)
    scoring: Scoring
    audit_windows: WindowSet
    audit: TrainingAudit


@dataclass(frozen=True)
class Trained:
    """What training did (step 6); `steps` and `examples` count every job of the root."""

    result: TrainResult
    best: BestWeights
    steps: int
    examples: int


def run_steps(
    job: Job,
    job_id: str,
    root: Path,
    stream: EventStream,
    control: JobControl,
    ranks: Ranks | None = None,
) -> int:
    from rovertrain.job.diagnostics import JobDiagnostics
    from rovertrain.job.resume import load_resume
    from rovertrain.job.state import TrainingState

    diagnostics = JobDiagnostics()  # counts the CPU time from here
    ranks = ranks or one_process(job.config.execution)

    # 2. Resume state (refused, never silently replaced, when incompatible).
    state = TrainingState.from_saved(load_resume(root))
    run = JobRun(job, job_id, root, stream, control, ranks, state, diagnostics)

    # 3. Partition, decode (each rank its shard), label and sample the sessions.
    dataset = decode_and_sample(run)

    # 4. Enough data?
    reason = too_little_data(run, dataset)
    if reason:
        samples = len(dataset.training)
        return finish_untrained(stream, control, dataset, diagnostics, reason, samples=samples)

    # 5. The policy (the resume state's on the same footage, else the initial weights), its
    #    loss, and the audit before training.
    trainee = prepare_training(run, dataset)

    # 6. Train until it converges, the passes end, maxStepsPerJob, the budget or a stop
    #    request; keep the best weights by the selection signal. Each rank trains on its share
    #    of every batch; stop, budget and convergence (rank 0's) are agreed at each step.
    trained = train_policy(run, dataset, trainee)
    if not ranks.leads:
        return ExitCode.COMPLETED  # rank 0 alone evaluates, publishes and saves the state
    diagnostics.training(trained.result)
    if trained.result.steps == 0:
        reason = "No training steps completed"
        return finish_untrained(stream, control, dataset, diagnostics, reason)
    diagnostics.selection(trained.best.finish(trained.steps).to_json())

    # 7. Evaluate on held-out sessions against the imitation gate; audits and probe.
    evaluation = evaluate_trained(run, dataset, trainee, trained)

    # 8. Publication rules.
    decision = publication_rules(run, dataset, trained, evaluation)

    # 9. Stage and publish the candidate, then save the resume state.
    candidate, published = publish_and_save(run, dataset, trainee, trained, evaluation, decision)

    # 10. The terminal event.
    return finish_trained(stream, control, candidate, published, diagnostics)


def decode_and_sample(run: JobRun) -> Dataset:
    from rovertrain.data.dataset import DatasetRequest, build_dataset
    from rovertrain.data.partition import processing_order

    job, config, control = run.job, run.job.config, run.control
    control.enter(Phase.DECODE)
    request = DatasetRequest(
        root=run.root,
        sessions=processing_order(job_sessions(job), job.seed),
        schema=run.state.schema,
        seed=job.seed,
        threads=config.execution.threads,
        decoding=config.decoding,
        sampling=config.sampling,
        curation=job_curation(job),
    )
    request = run.ranks.decode_shard(request, control)
    dataset = build_dataset(request, run.stream, control)
    control.pause_ended()
    run.ranks.agree_dataset(dataset, control)
    if run.ranks.leads:
        commit_store(run, dataset)
    run.diagnostics.dataset(dataset)
    return dataset


def commit_store(run: JobRun, dataset: Dataset) -> None:
    """The manifest gains the sessions this job ingested, the store is brought within its
    budget, and one `store` event sums up what was read and what was not (the sessions read
    each had a `dataset` event, the others are only counted here)."""
    from rovertrain.data.window_store.upkeep import commit_store as commit

    update = dataset.store
    if update is None:
        return
    budget = run.job.config.decoding.cacheMaxMegabytes * 2**20
    figures = commit(run.root, update, budget)
    reading = update.survey.reading
    run.stream.emit(
        "store",
        sessions=len(job_sessions(run.job)),
        new=len(update.ingested),
        read=len(reading.read),
        unread=len(dataset.unread),
        **figures.event_fields(),
    )


def too_little_data(run: JobRun, dataset: Dataset) -> str | None:
    """Why the job cannot train on these windows (a stop request counts too), or None."""
    from rovertrain.job.budget import not_enough_data

    training = dataset.training
    any_command = bool(len(training) and training.fires.any())
    minimum = run.job.config.sampling.minimumSamples
    return not_enough_data(len(training), any_command, run.control.should_stop(), minimum)


def prepare_training(run: JobRun, dataset: Dataset) -> Trainee:
    from rovertrain.data.partition import Partition
    from rovertrain.job import evaluation as ev
    from rovertrain.job.state import StartingWeights, new_footage, starting_weights
    from rovertrain.learn.evaluate import evaluate
    from rovertrain.learn.levels import ValueLevels
    from rovertrain.learn.losses import loss_setup

    config = run.job.config
    run.control.enter(Phase.TRAIN)
    hyper = hyperparameters(config, run.ranks.device.type)
    training = {
        result.session_id: result.windows for result in dataset.of_partition(Partition.TRAINING)
    }
    footage = new_footage(run.state.distinct_windows, training)
    start = starting_weights(run.state.weights is not None, footage)
    run.diagnostics.starting_weights(start, len(footage))
    resume = start is StartingWeights.RESUMED
    if not resume:
        run.state.learning_probe = None  # it described the weights left behind: due again
    model, optimizer = policy_to_train(run.state, hyper, run.job.seed, resume=resume)
    run.diagnostics.optimizer(optimizer_settings(optimizer))
    weights = config.loss
    setup = loss_setup(
        dataset.training, dataset.schema, weights.resendValueWeight, weights.typeChangeEventWeight
    )
    if not resume:  # a resumed policy keeps the levels it trained on
        model.use_levels(setup.levels or ValueLevels.none())
    placed_setup = run.ranks.place(model, optimizer, setup)
    scoring = ev.scoring_for(run.job, dataset)
    audit_windows = ev.audit_windows(dataset.training)
    started = time.monotonic()
    audit = ev.TrainingAudit(before=evaluate(model, audit_windows, scoring))
    run.diagnostics.seconds("beforeAuditSeconds", time.monotonic() - started)
    return Trainee(model, optimizer, hyper, setup, placed_setup, scoring, audit_windows, audit)


def train_policy(run: JobRun, dataset: Dataset, trainee: Trainee) -> Trained:
    """Trains on every rank; afterwards the policy and its optimizer are on the CPU."""
    from rovertrain.job import evaluation as ev
    from rovertrain.job.budget import training_deadline
    from rovertrain.learn.losses import selection_setup
    from rovertrain.learn.selection import BestWeights
    from rovertrain.learn.train import TrainingPlan, train

    config, ranks, state, model = run.job.config, run.ranks, run.state, trainee.model
    plan = TrainingPlan(
        pool=dataset.training,
        setup=trainee.placed_setup,
        hyper=trainee.hyper,
        seed=run.job.seed,
        start_steps=state.steps,
        start_examples=state.examples,
        deadline_seconds=training_deadline(config.budget.maxJobSeconds, len(dataset.held_out)),
        share=ranks.share(),
    )
    selection = config.selection
    best = BestWeights(
        model,
        dataset.selection,
        selection_setup(trainee.setup),
        batch_size=config.optimisation.batchSize,
        every_steps=selection.selectEverySteps,
        patience=selection.patience,
        average_decay=selection.weightAverageDecay,
    )
    every = config.monitoring.evalEverySteps
    periodic = ev.periodic_evaluation(
        run.stream, every, model, dataset.held_out, trainee.scoring, trainee.setup
    )
    on_step = ranks.lead_only(ev.each_step(best.on_step, periodic))
    reporter = progress_reporter(run.stream, run.control)
    with ranks.guard():
        result = train(
            ranks.wrapped(model),
            trainee.optimizer,
            plan,
            ranks.agreed(run.control),
            reporter,
            on_step=on_step,
            converged=ranks.leader_decides(best.converged),
        )
        ranks.trained(run.stream, dataset, result)
    ranks.to_cpu(model, trainee.optimizer)
    steps, examples = state.steps + result.steps, state.examples + result.examples
    return Trained(result, best, steps, examples)


def evaluate_trained(
    run: JobRun, dataset: Dataset, trainee: Trainee, trained: Trained
) -> GateEvaluation:
    """The imitation gate's evaluation; the audit after training and (when due) the
    learning probe go to the diagnostics."""
    from rovertrain.job import evaluation as ev
    from rovertrain.learn.evaluate import evaluate

    config, control, model, audit = run.job.config, run.control, trainee.model, trainee.audit
    control.enter(Phase.EVALUATE)
    started = time.monotonic()
    run.state.distinct_windows.update(dataset.observed_windows)
    evaluation = ev.gate_evaluation(model, dataset, run.job, trainee.scoring, control.should_stop)
    audit.after = evaluate(model, trainee.audit_windows, trainee.scoring)
    probe = ev.ProbeInputs(
        model=model,
        windows=trainee.audit_windows,
        setup=trainee.setup,
        learning_rate=config.optimisation.learningRate,
        max_seconds=config.monitoring.probeMaxSeconds,
    )
    ev.probe_when_due(audit, run.state, probe, control, trained.steps)
    audit.extra = ev.audit_inputs(trained.result, trainee.setup, trainee.scoring, dataset.training)
    run.diagnostics.evaluation(audit.to_json(), audit.probe_seconds, time.monotonic() - started)
    return evaluation


def publication_rules(
    run: JobRun, dataset: Dataset, trained: Trained, evaluation: GateEvaluation
) -> PublicationDecision:
    """Whether to promote; the resume state then takes in this job's schema and rovers."""
    from rovertrain.gate.publication import PublicationHistory, publication_decision

    state = run.state
    stop_label = run.control.stop_label() or trained.result.stopped_by.publication_blocker()
    history = PublicationHistory(
        distinct_windows=state.distinct_window_count(),
        published_windows=state.published_windows,
        steps_since_publication=trained.steps - state.last_published,
    )
    rules = run.job.config.publication
    decision = publication_decision(history, evaluation.status, stop_label, rules)
    if rules.canaryMinutes > 0:  # promotion from the field: judge the last canary first
        from rovertrain.job.canary import canary_decision, judge_canary

        fleet = judge_canary(run.root, dataset, rules.canaryMinutes)
        decision = canary_decision(decision, fleet, rules.canaryWhen)
    state.absorb(dataset.schema, dataset.trained_rovers, dataset.control_profiles)
    return decision


def publish_and_save(
    run: JobRun,
    dataset: Dataset,
    trainee: Trainee,
    trained: Trained,
    evaluation: GateEvaluation,
    decision: PublicationDecision,
) -> tuple[Candidate, Published]:
    from rovertrain.job.publication import Candidate, carry_over, publish

    run.control.enter(Phase.PUBLISH)
    started = time.monotonic()
    candidate = Candidate(
        job_id=run.job_id,
        job=run.job,
        dataset=dataset,
        steps=trained.steps,
        examples=trained.examples,
        training_loss=trained.result.mean_loss(),
        evaluation=evaluation,
        decision=decision,
    )
    published = publish(run.root, candidate, run.state, trainee.model)
    if decision.judged is not None:  # a canary judged promoted, once this job's is safe
        from rovertrain.job.canary import promote_canary

        promote_canary(run.root, decision.judged)
    announce_published(run.stream, published, decision.promote)
    carry_over(run.root, run.state, candidate, trainee.model, trainee.optimizer)
    run.diagnostics.seconds("checkpointSeconds", time.monotonic() - started)
    run.diagnostics.finish(published.document["specification"])
    return candidate, published
