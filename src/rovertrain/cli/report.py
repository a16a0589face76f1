"""`rovertrain report`: a dashboard picture of one job, from its event log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rovertrain.cli.summary import job_lines
from rovertrain.contracts.errors import RovertrainError
from rovertrain.protocol.console import console_line
from rovertrain.protocol.eventlog import read_events
from rovertrain.store.durable import replacing
from rovertrain.store.layout import JobDir

WIDTH_IN, HEIGHT_IN, DPI = 14, 9, 100


def load_events(job_dir: Path) -> list[dict[str, Any]]:
    path = JobDir(job_dir).events
    if not path.exists():
        raise RovertrainError("not_found", f"No event log at {path}.")
    return list(read_events(path))


def write_report(job_dir_text: str, out: str | None) -> dict[str, Any]:
    try:
        import matplotlib
    except ImportError:
        raise RovertrainError(
            "missing_dependency", "The report needs matplotlib: pip install 'rovertrain[report]'."
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    job_dir = Path(job_dir_text)
    events = load_events(job_dir)
    progress = [e for e in events if e["kind"] == "progress"]
    evaluations = [e for e in events if e["kind"] == "evaluation"]
    started = next((e for e in events if e["kind"] == "started"), {})
    last = events[-1] if events else {}
    if last.get("kind") == "complete" and "f1" in (last.get("evaluation") or {}):
        evaluations = [*evaluations, {"steps": last["steps"], "metrics": last["evaluation"]}]

    figure, axes = plt.subplots(2, 3, figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    loss_panel(axes[0][0], progress)
    held_out_panel(axes[0][1], evaluations, started.get("gate", {}))
    axes[1][0].plot([e["steps"] for e in progress], [e["examplesPerSecond"] for e in progress])
    axes[1][0].set(title="Throughput (examples/s)", xlabel="step")
    sessions_panel(axes[1][1], events)
    field_panel(axes[0][2], Path(started["root"]) if "root" in started else None)
    axes[1][2].axis("off")
    figure.suptitle(f"rovertrain job {last.get('jobId', job_dir.name)}")
    figure.tight_layout()
    path = Path(out) if out else JobDir(job_dir).report
    try:
        with replacing(path) as temporary:
            figure.savefig(temporary, format="png")
    finally:
        plt.close(figure)
    for line in job_lines(events):
        console_line(line)
    console_line(f"report: {path}")
    return {"path": str(path), "width": WIDTH_IN * DPI, "height": HEIGHT_IN * DPI}


def loss_panel(ax: Any, progress: list[dict[str, Any]]) -> None:
    steps = [e["steps"] for e in progress]
    ax.plot(steps, [e["loss"] for e in progress], label="total")
    ax.plot(steps, [e["losses"]["events"] for e in progress], label="events")
    ax.plot(steps, [e["losses"]["commandValues"] for e in progress], label="command values")
    ax.set(title="Training loss", xlabel="step")
    ax.legend()


def held_out_panel(ax: Any, evaluations: list[dict[str, Any]], gate: dict[str, Any]) -> None:
    eval_steps = [e["steps"] for e in evaluations]
    for key, label, threshold in (
        ("f1", "F1", None),
        ("stopRecall", "stop recall", gate.get("minStopRecall")),
        ("movementRecall", "movement recall", gate.get("minMovementRecall")),
        ("precision", "precision", None),
        ("timelyPrecision", "precision, one tick early on time", gate.get("minPrecision")),
    ):
        values = [e["metrics"].get(key) for e in evaluations]
        if all(value is None for value in values):
            continue  # a job from before the figure was reported
        values = [0 if value is None else value for value in values]
        line = ax.plot(eval_steps, values, marker="o", label=label)
        if threshold is not None:
            ax.axhline(threshold, color=line[0].get_color(), linestyle=":", linewidth=1)
    blind_f1 = [(e["metrics"].get("blind") or {}).get("f1") for e in evaluations]
    if any(value is not None for value in blind_f1):
        ax.plot(eval_steps, blind_f1, marker="x", linestyle="--", color="grey", label="F1 blind")
    change_recall = [e["metrics"].get("changeRecall") for e in evaluations]
    if any(value is not None for value in change_recall):
        ax.plot(eval_steps, change_recall, marker=".", label="recall of changes")
    ax.set(title="Held-out metrics (dotted: gate thresholds)", xlabel="step", ylim=(0, 1.05))
    ax.legend()


def sessions_panel(ax: Any, events: list[dict[str, Any]]) -> None:
    datasets = [e for e in events if e["kind"] == "dataset"]
    skipped = [e for e in events if e["kind"] == "skipped"]
    names = [e["sessionId"] for e in datasets]
    bottom = [0] * len(names)
    for category in ("none", "command", "stop"):
        counts = [e["diagnostics"].get("categories", {}).get(category, 0) for e in datasets]
        ax.barh(names, counts, left=bottom, label=category)
        bottom = [a + b for a, b in zip(bottom, counts, strict=True)]
    for index, event in enumerate(datasets):
        if event.get("partition") == "heldOut":
            ax.text(bottom[index], index, " held out", va="center", fontsize=8)
    ax.set(title=f"Windows per session ({len(skipped)} skipped)", xlabel="windows")
    ax.legend()
    if skipped:
        text = "\n".join(f"{e['sessionId']}: {e['reason'][:60]}" for e in skipped[:6])
        ax.text(0.98, 0.02, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=7)


def field_trend(root: Path) -> list[tuple[str, float]]:
    """(model name, take-overs per 10 minutes of autonomy) for every published model, oldest
    first, that drove under supervision, as the newest model.json that reports it says."""
    from rovertrain.store.catalogue import catalogue, field_reports

    records = catalogue(root) if root.is_dir() else []
    reports = field_reports(records)
    rows = []
    for record in records:
        found = reports.get(record.id)
        rate = None if found is None else found[0].get("takeOversPer10Minutes")
        if isinstance(rate, int | float):
            rows.append((record.name or record.id[:8], float(rate)))
    return rows


def field_panel(ax: Any, root: Path | None) -> None:
    """The trend across published models (`field_trend`)."""
    rows = field_trend(root) if root is not None else []
    ax.set(title="Field: take-overs per 10 min of autonomy, by model")
    if not rows:
        ax.text(0.5, 0.5, "no supervised drives recorded", ha="center", va="center")
        ax.set_xticks([])
        ax.set_yticks([])
        return
    ax.plot([name for name, _ in rows], [rate for _, rate in rows], marker="o")
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
