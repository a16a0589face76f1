"""The window store across jobs (issue 28): ingest once, read a bounded sample of the past,
upgrade a root written before the manifest, honour the budget. Real jobs through the CLI on
cloned synthetic sessions (the clones share their video files: hard links)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Result, cli_env, parse_events, run_cli
from fleet import clone_sessions, clone_store_entries
from rovertrain.data.window_store.manifest import manifest_path, read_manifest

QUICK = {"passesPerJob": 1, "maxStepsPerJob": 2, "minimumSamples": 1, "maxSamples": 2000,
         "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
         "probeMaxSeconds": 0, "batchSize": 8, "sessionsPerJob": 4, "heldOutSessions": 2,
         "threads": 2}  # fmt: skip


def job_file(root: Path, **config: Any) -> Path:
    path = root / "job-store.json"
    document = {"root": str(root), "seed": 1, "config": {**QUICK, **config}}
    path.write_text(json.dumps(document))
    return path


def run_job(root: Path, **config: Any) -> Result:
    result = run_cli("run", "--job", str(job_file(root, **config)))
    assert result.code in (0, 3), result.stderr  # published or held back: both are fine here
    return result


def store_event(result: Result) -> dict[str, Any]:
    (event,) = result.of("store")
    return event


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store") / "root"
    made = run_cli("synth", "--out", str(root), "--sessions", "3", "--minutes", "0.1",
                   "--seed", "5")  # fmt: skip
    assert made.code == 0, made.stderr
    clone_sessions(root, 17, "clone")
    return root


@pytest.fixture
def store_root(small_store: Path, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(small_store / "recordings", root / "recordings")
    return root


@pytest.fixture(scope="module")
def first_job(small_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """The 20 sessions' first job, run once for the module: it decodes and stores every
    session, the cost the tests that start from a stored root would each pay again."""
    root = tmp_path_factory.mktemp("ingested") / "root"
    shutil.copytree(small_store / "recordings", root / "recordings")
    return root, run_job(root)


@pytest.fixture
def ingested_root(first_job: tuple[Path, Result], tmp_path: Path) -> Path:
    """A private copy of the root after its first job: training/ copied, the recordings hard
    links (the store knows a video by its inode, so a copied one would be new footage)."""
    root = tmp_path / "root"
    shutil.copytree(first_job[0] / "recordings", root / "recordings", copy_function=os.link)
    shutil.copytree(first_job[0] / "training", root / "training")
    return root


def test_ingest_once_then_read_a_bounded_sample(
    first_job: tuple[Path, Result], ingested_root: Path
) -> None:
    store_root = ingested_root
    event = store_event(first_job[1])
    assert event["sessions"] == 20 and event["new"] == 20 and event["read"] == 20
    assert event["unread"] == 0 and not event["migrated"]
    assert len(read_manifest(store_root).rows) == 20

    second = run_job(store_root)
    event = store_event(second)
    assert event["new"] == 0 and event["storedSessions"] == 20
    assert event["read"] <= 4 + 2 and event["unread"] == 20 - event["read"]
    read = second.of("dataset")
    assert len(read) == event["read"]  # the others are only counted: bounded events
    assert all(row["diagnostics"]["cached"] for row in read)  # nothing decoded again

    (new_session,) = clone_sessions(store_root, 1, "fresh")
    third = run_job(store_root)
    event = store_event(third)
    assert event["new"] == 1
    fresh = [row for row in third.of("dataset") if row["sessionId"] == new_session]
    assert fresh and not fresh[0]["diagnostics"]["cached"]  # decoded, once
    assert read_manifest(store_root).generation == 3


def test_a_root_written_before_the_manifest_is_migrated_once(ingested_root: Path) -> None:
    store_root = ingested_root  # after its first job
    manifest_path(store_root).unlink()  # what today's release leaves: entries, no manifest
    upgraded = run_job(store_root)
    event = store_event(upgraded)
    assert event["migrated"] and event["new"] == 20
    assert all(row["diagnostics"]["cached"] for row in upgraded.of("dataset"))
    after = run_job(store_root)
    assert not store_event(after)["migrated"] and store_event(after)["new"] == 0


def test_a_killed_migration_leaves_a_usable_root(ingested_root: Path) -> None:
    store_root = ingested_root  # after its first job
    path = manifest_path(store_root)
    path.write_bytes(path.read_bytes()[:100])  # torn, as by a writer killed without rename
    (path.parent / f".{path.name}.12345.tmp").write_bytes(b"PAR1 half")
    event = store_event(run_job(store_root))
    assert event["new"] == 20 and event["storedSessions"] == 20
    assert len(read_manifest(store_root).rows) == 20
    assert not (path.parent / f".{path.name}.12345.tmp").exists()


def test_the_budget_is_honoured_oldest_frames_first(ingested_root: Path) -> None:
    store_root = ingested_root  # after its first job
    tight = run_job(store_root, cacheMaxMegabytes=1)
    event = store_event(tight)
    assert event["droppedSessions"] > 0 and event["storedSessions"] == 20
    assert event["storeBytes"] <= 2**20 or event["droppedSessions"] == 20 - event["read"]
    rows = read_manifest(store_root).rows.values()
    dropped = {row.session_id for row in rows if row.dropped}
    assert len(dropped) == event["droppedSessions"]
    assert all(not (store_root / "training" / "cache" / f"{row.entry}.frames").exists()
               for row in rows if row.dropped)  # fmt: skip
    later = run_job(store_root, cacheMaxMegabytes=1)
    assert store_event(later)["new"] == 0  # dropped frames are not decoded again
    assert not dropped & {row["sessionId"] for row in later.of("dataset")}


def test_a_thousand_sessions_under_64_open_files(tmp_path: Path) -> None:
    """The first job on a 1,000-session root written before the manifest migrates it, the
    next reads a bounded sample; both under `ulimit -n 64`."""
    root = tmp_path / "root"
    made = run_cli("synth", "--out", str(root), "--sessions", "2", "--minutes", "0.05",
                   "--seed", "9")  # fmt: skip
    assert made.code == 0, made.stderr
    assert run_cli("inspect", str(root)).code == 0  # the two sources' entries
    (root / "training" / "cache" / "manifest.parquet").unlink()
    clone_store_entries(root, clone_sessions(root, 998, "fleet"))
    job = job_file(root)
    command = f"ulimit -n 64 && exec {sys.executable} -m rovertrain run --job {job}"
    for expected_new in (1000, 0):
        completed = subprocess.run(
            ["bash", "-c", command], capture_output=True, timeout=600, env=cli_env(), cwd=REPO
        )
        result = Result(
            completed.returncode, parse_events(completed.stdout), completed.stderr.decode()
        )
        assert result.code in (0, 3), result.stderr[-3000:]
        event = store_event(result)
        assert event["sessions"] == 1000 and event["new"] == expected_new
        assert event["migrated"] == (expected_new == 1000)
    assert len(result.events) < 60  # the other 990-odd sessions are only counted


def test_a_session_a_policy_drove_throughout_is_ingested_once(store_root: Path) -> None:
    """No usable window, but a row: its minutes count for the model that drove, and it is
    neither decoded nor labelled again by the next job."""
    (session,) = clone_sessions(store_root, 1, "autonomous")
    log = store_root / "recordings" / session / "commands.ndjson"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    log.unlink()  # a hard link: write a file of its own
    log.write_text("".join(json.dumps({**line, "by": "policy"}) + "\n" for line in lines))
    first = run_job(store_root)
    (skipped,) = [e for e in first.of("skipped") if e["sessionId"] == session]
    assert skipped["code"] == "no_windows"
    assert session in read_manifest(store_root).rows
    second = run_job(store_root)
    assert store_event(second)["new"] == 0
    assert session not in {e["sessionId"] for e in second.of("skipped")}
