from __future__ import annotations

from pathlib import Path

from rovertrain.job.resume import resume_path
from rovertrain.learn.policy import VERSION
from rovertrain.protocol.eventlog import keep_previous_log
from rovertrain.store.durable import JobLock
from rovertrain.store.layout import JobDir, Layout, is_staging


def test_every_path_of_the_tree() -> None:
    root = Path("/data")
    layout = Layout(root)
    assert layout.recordings == root / "recordings"
    assert layout.recording_dir("s1") == root / "recordings" / "s1"
    assert layout.curation == root / "curation.json"
    assert layout.curation_lock == root / ".curation.lock"
    assert layout.training == root / "training"
    assert layout.lock == root / "training" / ".lock"
    assert layout.current == root / "training" / "current.json"
    assert layout.resume(3) == root / "training" / "resume-v3.pt"
    assert layout.window_store == root / "training" / "cache"
    assert layout.entry_frames("s1-ab") == root / "training" / "cache" / "s1-ab.frames"
    assert layout.entry_meta("s1-ab") == root / "training" / "cache" / "s1-ab.json"
    assert layout.checkpoints == root / "training" / "checkpoints"
    assert layout.checkpoint("m1") == root / "training" / "checkpoints" / "m1"
    assert layout.staging("m1") == root / "training" / "checkpoints" / ".m1.pending"
    assert layout.jobs == root / "training" / "jobs"
    job = layout.job("nightly")
    assert job == JobDir(root / "training" / "jobs" / "nightly")
    assert job.events == job.path / "events.ndjson"
    assert job.previous_events(2) == job.path / "events.2.ndjson"
    assert job.training_log == job.path / "training_log.csv"
    assert job.checkpoint_evals == job.path / "checkpoint_evals.csv"
    assert job.report == job.path / "report.png"
    assert job.lock == layout.lock


def test_staging_names() -> None:
    assert is_staging(Layout(Path("/r")).staging("m1").name)
    assert not is_staging("m1")
    assert not is_staging(".m1")
    assert not is_staging("m1.pending")


def test_the_store_uses_the_layout(tmp_path: Path) -> None:
    assert resume_path(tmp_path) == Layout(tmp_path).resume(VERSION)
    assert JobLock(tmp_path).path == Layout(tmp_path).lock


def test_keep_previous_log_numbers_earlier_logs(tmp_path: Path) -> None:
    job = Layout(tmp_path).job("j")
    keep_previous_log(job.path)  # no folder, no log: nothing to do
    job.path.mkdir(parents=True)
    for text in ("first\n", "second\n"):
        job.events.write_text(text)
        keep_previous_log(job.path)
    assert not job.events.exists()
    assert job.previous_events(1).read_text() == "first\n"
    assert job.previous_events(2).read_text() == "second\n"
