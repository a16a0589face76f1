"""`rovertrain run`: one finite training job, read top to bottom as its named steps.

Every step's detail lives in its own module: data/ (decode, label, sample), learn/ (policy,
loop, evaluation), gate.py (the rules), store/ (checkpoints, resume), job/ (lifecycle).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.job.config import Job
from rovertrain.job.control import JobControl, Phase
from rovertrain.job.preflight import check_root_usable, job_sessions, with_sessions
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
    progress_reporter,
    restore_policy,
)
from rovertrain.protocol.events import EventStream
from rovertrain.store.layout import Layout


def run_job(job: Job, stream: EventStream, watchers: Sequence[JobWatcher] = ()) -> int:
    job_id = job.jobId or new_job_id()
    stream.bind_job(job_id)
    root = job.root.resolve()

    # 1. Validate, budget the CPU, join the other ranks (if a launcher started several), lock
    #    the root, clean up after crashed jobs, announce. Rank 0 alone locks, cleans, announces.
    check_root_usable(root)
    job = with_sessions(job, root)
    limit_cpu(job.config.threads)
    ranks = join_ranks(job.config)
    try:
        job, job_id = ranks.agree_job(job, job_id)  # rank 0's
        stream.bind_job(job_id)
        from rovertrain.store.publish import remove_stale_staging

        lock = ranks.root_lock(root)
        lock.acquire()
        control = job_control(job.config, stream, watchers)
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


def run_steps(
    job: Job,
    job_id: str,
    root: Path,
    stream: EventStream,
    control: JobControl,
    ranks: Ranks | None = None,
) -> int:
    from rovertrain.data.dataset import DatasetRequest, build_dataset
    from rovertrain.data.partition import processing_order
    from rovertrain.gate import (
        PublicationHistory,
        not_enough_data,
        publication_decision,
        training_deadline,
    )
    from rovertrain.job import evaluation as ev
    from rovertrain.job.diagnostics import JobDiagnostics
    from rovertrain.job.publication import Candidate, carry_over, publish
    from rovertrain.job.resume import load_resume
    from rovertrain.job.state import TrainingState
    from rovertrain.learn.evaluate import evaluate
    from rovertrain.learn.losses import loss_setup, selection_setup
    from rovertrain.learn.selection import BestWeights
    from rovertrain.learn.train import TrainingPlan, train

    config = job.config
    diagnostics = JobDiagnostics()
    ranks = ranks or one_process(config)

    # 2. Resume state (refused, never silently replaced, when incompatible).
    state = TrainingState.from_saved(load_resume(root))

    # 3. Partition, decode (each rank its shard), label and sample the sessions.
    control.enter(Phase.DECODE)
    order = processing_order(job_sessions(job), job.seed)
    request = DatasetRequest(root, order, state.schema, config, job.seed)
    request = ranks.decode_shard(request, control)
    dataset = build_dataset(request, stream, control)
    control.pause_ended()
    ranks.agree_dataset(dataset, control)
    diagnostics.dataset(dataset)

    # 4. Enough data?
    pool, validation = dataset.pool, dataset.validation
    any_command = bool(len(pool) and pool.fires.any())
    reason = not_enough_data(len(pool), any_command, control.should_stop(), config.minimumSamples)
    if reason:
        return finish_untrained(stream, control, dataset, diagnostics, reason, samples=len(pool))

    # 5. The policy (restored from the resume state), its loss, and the audit before training.
    control.enter(Phase.TRAIN)
    hyper = hyperparameters(config, ranks.device.type)
    model, optimizer = restore_policy(state, hyper, job.seed)
    diagnostics.optimizer(optimizer_settings(optimizer))
    setup = loss_setup(pool, dataset.schema, config.resendValueWeight, config.typeChangeEventWeight)
    placed_setup = ranks.place(model, optimizer, setup)
    scoring = ev.scoring_for(job, dataset)
    audit_windows = ev.audit_windows(pool)
    started = time.monotonic()
    audit = ev.TrainingAudit(before=evaluate(model, audit_windows, scoring))
    diagnostics.seconds("beforeAuditSeconds", time.monotonic() - started)

    # 6. Train until it converges, the passes end, maxStepsPerJob, the budget or a stop
    #    request; keep the best weights by the selection signal. Each rank trains on its share
    #    of every batch; stop, budget and convergence (rank 0's) are agreed at each step.
    deadline = training_deadline(config.maxJobSeconds, len(validation))
    plan = TrainingPlan(
        pool, placed_setup, hyper, job.seed, state.steps, state.examples, deadline,
        share=ranks.share(),
    )  # fmt: skip
    best = BestWeights(
        model, dataset.selection, selection_setup(setup), config.batchSize, config.selectEverySteps,
        config.patience, config.weightAverageDecay,
    )  # fmt: skip
    periodic = ev.periodic_evaluation(
        stream, config.evalEverySteps, model, validation, scoring, setup
    )
    on_step = ranks.lead_only(ev.each_step(best.on_step, periodic))
    reporter = progress_reporter(stream, control)
    with ranks.guard():
        result = train(
            ranks.wrapped(model), optimizer, plan, ranks.agreed(control), reporter, on_step,
            ranks.leader_decides(best.converged),
        )  # fmt: skip
        ranks.trained(stream, dataset, result)
    ranks.to_cpu(model, optimizer)
    if not ranks.leads:
        return ExitCode.COMPLETED  # rank 0 alone evaluates, publishes and saves the state
    diagnostics.training(result)
    if result.steps == 0:
        return finish_untrained(
            stream, control, dataset, diagnostics, "No training steps completed"
        )
    steps, examples = state.steps + result.steps, state.examples + result.examples
    diagnostics.selection(best.finish(steps).to_json())

    # 7. Evaluate on held-out sessions against the imitation gate; audits and probe.
    control.enter(Phase.EVALUATE)
    started = time.monotonic()
    state.distinct_windows.update(dataset.observed_windows)
    evaluation = ev.gate_evaluation(model, dataset, job, scoring, control.should_stop)
    audit.after = evaluate(model, audit_windows, scoring)
    probe = ev.ProbeInputs(model, audit_windows, setup, config.learningRate, config.probeMaxSeconds)
    ev.probe_when_due(audit, state, probe, control, steps)
    audit.extra = ev.audit_inputs(result, setup, scoring, pool)
    diagnostics.evaluation(audit.to_json(), audit.probe_seconds, time.monotonic() - started)

    # 8. Publication rules.
    stop_label = control.stop_label() or result.stopped_by.publication_blocker()
    history = PublicationHistory(
        state.distinct_window_count(), state.published_windows, steps - state.last_published
    )
    decision = publication_decision(history, evaluation.status, stop_label, config)
    state.absorb(dataset.schema, dataset.trained_rovers, dataset.control_profiles)

    # 9. Stage and publish the candidate, then save the resume state.
    control.enter(Phase.PUBLISH)
    started = time.monotonic()
    candidate = Candidate(
        job_id, job, dataset, steps, examples, result.mean_loss(), evaluation, decision
    )
    published = publish(root, candidate, state, model)
    announce_published(stream, published, decision.promote)
    carry_over(root, state, candidate, model, optimizer)
    diagnostics.seconds("checkpointSeconds", time.monotonic() - started)
    diagnostics.finish(dataset.schema)

    # 10. The terminal event.
    return finish_trained(stream, control, candidate, published, diagnostics)
