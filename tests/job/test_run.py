"""End-to-end jobs on a small synthetic data set (fast)."""

from __future__ import annotations

import fcntl
import json
import shutil
import signal
from pathlib import Path

import pytest
import torch

from conftest import check_model_manifest, parse_events, signal_after_progress, write_job
from rovertrain.data.partition import is_held_out
from rovertrain.learn.policy import VERSION

RESUME_FILE = f"resume-v{VERSION}.pt"  # the resume state of this policy version

FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 2, "batchSize": 16}  # fmt: skip
# The jobs whose checks are not about the learning probe skip it (test_full_run_... checks it).
UNPROBED = {**FAST, "probeMaxSeconds": 0}


def checkpoints(root: Path) -> list[Path]:
    directory = root / "training" / "checkpoints"
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def test_full_run_publishes_a_verified_checkpoint(cli, synth_copy: Path) -> None:
    path = write_job(synth_copy, **FAST)
    job = json.loads(path.read_text())
    del job["sessions"]  # every session under root/recordings
    path.write_text(json.dumps(job))
    result = cli("run", "--job", str(path))
    assert result.code == 0, result.stderr
    kinds = result.kinds()
    assert kinds[0] == "started" and kinds[-1] == "complete"
    assert result.events[0]["sessions"] == 5
    phases = [e["phase"] for e in result.of("phase")]
    assert phases == ["decode", "train", "evaluate", "publish"]
    assert len(result.of("dataset")) == 5
    assert {e["partition"] for e in result.of("dataset")} == {"training", "heldOut"}
    complete = result.last()
    assert complete["trained"] and complete["steps"] == 20
    assert len(result.of("progress")) == 2
    probe = complete["diagnostics"]["trainingAudit"]["learningProbe"]
    assert probe["steps"] > 0 and probe["seconds"] <= 2 + 1 and probe["atTrainingStep"] == 20
    (checkpoint,) = checkpoints(synth_copy)
    meta = json.loads((checkpoint / "model.json").read_text())
    check_model_manifest(meta)
    assert meta["id"] == checkpoint.name == complete["published"]["id"]
    assert set(meta["files"]) == {"weights.safetensors"}
    assert meta["jobId"] == complete["jobId"] and meta["specification"]["version"] >= 1
    assert meta["actionThreshold"] == 0.5 and meta["steeringDeadband"] == 0.1
    # How the event loss weighed each type, for the rover to read the event head as the
    # person's chance (runtime.policy.person_chance): the weights training used.
    output = meta["specification"]["output"]
    used = complete["diagnostics"]["trainingAudit"]["positiveWeights"]
    assert list(output["eventWeights"].values()) == pytest.approx(used, abs=1e-4)
    assert (synth_copy / "training" / RESUME_FILE).exists()
    # The job's events were mirrored for late viewers.
    job_log = synth_copy / "training" / "jobs" / complete["jobId"] / "events.ndjson"
    assert parse_events(job_log.read_text()) == result.events
    models = cli("models", str(synth_copy))
    assert [e["valid"] for e in models.events] == [True]


def test_the_same_job_trains_the_same_weights(cli, synth_copy: Path, tmp_path: Path) -> None:
    import shutil

    twin = tmp_path / "twin"
    shutil.copytree(synth_copy / "recordings", twin / "recordings")
    job = json.loads((synth_copy / "job.json").read_text())
    job["root"] = str(twin)
    (twin / "job.json").write_text(json.dumps(job))
    weights = []
    for root in (synth_copy, twin):
        result = cli("run", "--job", str(write_job(root, **FAST)))
        assert result.code == 0 and result.last()["steps"] == 20, result.stderr
        (checkpoint,) = checkpoints(root)
        weights.append((checkpoint / "weights.safetensors").read_bytes())
    # Two processes, two roots, one job: the initial weights come from the job's seed, not
    # from the process's generator (before: F1 0.47 against 0.67 after 45 steps).
    assert weights[0] == weights[1]


def test_resume_continues_the_step_count_and_uses_the_cache(cli, synth_copy: Path) -> None:
    job = write_job(synth_copy, **UNPROBED)
    first = cli("run", "--job", str(job))
    second = cli("run", "--job", str(job))
    assert first.last()["steps"] == 20 and second.last()["steps"] == 40
    assert all(e["diagnostics"]["cached"] for e in second.of("dataset"))
    assert len(checkpoints(synth_copy)) == 2


def test_new_footage_starts_from_the_initial_weights(cli, synth_copy: Path, tmp_path: Path) -> None:
    """A job resumes the saved weights only on the footage they were trained on; a training
    session the earlier jobs never read sends it back to the seed's initial weights."""
    # Four jobs: a few steps each tell the initial weights from resumed ones.
    steps = 5
    everything = json.loads(
        write_job(synth_copy, **{**UNPROBED, "maxStepsPerJob": steps}).read_text()
    )
    training = [s for s in everything["sessions"] if not is_held_out(s)]
    earlier = [s for s in everything["sessions"] if s != training[-1]]
    first_job = synth_copy / "job-first.json"
    first_job.write_text(json.dumps({**everything, "sessions": earlier}))
    job = synth_copy / "job-all.json"
    job.write_text(json.dumps(everything))
    alone = tmp_path / "alone"  # the same job on a root without a resume state
    shutil.copytree(synth_copy / "recordings", alone / "recordings")
    (alone / "job.json").write_text(json.dumps({**everything, "root": str(alone)}))

    runs = [cli("run", "--job", str(path)) for path in (first_job, job, job, alone / "job.json")]

    diagnostics = [r.last()["diagnostics"] for r in runs]
    starts = [(d["startingWeights"], d["newFootageSessions"]) for d in diagnostics]
    assert starts[:3] == [("initial", len(training) - 1), ("initial: new footage", 1), ("resumed", 0)]  # fmt: skip
    assert [r.last()["steps"] for r in runs[:3]] == [steps, 2 * steps, 3 * steps]  # carried over
    # Before training, the second job's model scores what the initial weights score on the
    # same windows, and the resumed third job's does not.
    before = [d["trainingAudit"]["before"] for d in diagnostics]
    assert before[1] == before[3] != before[2]


def test_same_seed_same_samples_and_schema(cli, synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**UNPROBED, "maxStepsPerJob": 1})
    first = cli("run", "--job", str(job))
    (synth_copy / "training" / RESUME_FILE).unlink()
    second = cli("run", "--job", str(job))

    def picked(result):
        return [(e["sessionId"], e["sampled"], e["partition"]) for e in result.of("dataset")]

    assert picked(first) == picked(second)
    assert (
        first.last()["published"]["specification"]["schema"]
        == second.last()["published"]["specification"]["schema"]
    )


@pytest.mark.parametrize("content", [b"garbage", "version"])
def test_incompatible_resume_is_refused(cli, synth_copy: Path, content) -> None:
    path = synth_copy / "training" / RESUME_FILE
    path.parent.mkdir(parents=True)
    if content == "version":
        torch.save({"version": 999, "weights": {}}, path)
    else:
        path.write_bytes(content)
    result = cli("run", "--job", str(write_job(synth_copy, **FAST)))
    assert result.code == 1
    assert result.kinds()[0] == "started" and result.last()["code"] == "resume_incompatible"
    assert not (synth_copy / "training" / "checkpoints").exists()


def test_locked_root_exits_75(cli, synth_copy: Path) -> None:
    lock_path = synth_copy / "training" / ".lock"
    lock_path.parent.mkdir(parents=True)
    with open(lock_path, "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        result = cli("run", "--job", str(write_job(synth_copy, **FAST)))
    assert result.code == 75 and result.kinds() == ["error"]
    assert result.last()["code"] == "locked"
    assert lock_path.exists()


def test_not_enough_data_completes_untrained(cli, synth_copy: Path) -> None:
    result = cli("run", "--job", str(write_job(synth_copy, **{**FAST, "minimumSamples": 10**6})))
    assert result.code == 0
    assert result.last()["trained"] is False
    assert "Waiting for enough" in result.last()["reason"]


def test_decoder_crash_and_hang_skip_only_that_session(cli, synth_copy: Path) -> None:
    job = json.loads(write_job(synth_copy, **{**UNPROBED, "decodeTimeoutSeconds": 3}).read_text())
    crash, hang = job["sessions"][0], job["sessions"][1]
    path = synth_copy / "job-hooks.json"
    path.write_text(json.dumps(job))
    result = cli("run", "--job", str(path), hooks={"crash": [crash], "hang": [hang]})
    assert result.code == 0, result.stderr
    skipped = {e["sessionId"]: e["code"] for e in result.of("skipped")}
    assert skipped == {crash: "decoder_crashed", hang: "decode_timeout"}
    assert len(result.of("dataset")) == 3
    from reliability.invariants import orphan_decoders

    assert not orphan_decoders()


def test_sigterm_during_training_completes_with_the_stop_reason(synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000, "passesPerJob": 1000})
    returncode, events = signal_after_progress(job, signal.SIGTERM, timeout=60)
    assert returncode == 0
    complete = events[-1]
    assert complete["kind"] == "complete" and complete["trained"]
    assert "Stopped by SIGTERM" in complete["publication"]["reason"]
    assert complete["promote"] is False
    assert (synth_copy / "training" / RESUME_FILE).exists()
    assert not (synth_copy / "training" / "current.json").exists()  # not promoted


def test_max_job_seconds_is_kept_including_publication(cli, synth_copy: Path) -> None:
    job = write_job(synth_copy, **{**FAST, "maxStepsPerJob": 100000, "passesPerJob": 1000,
                                    "maxJobSeconds": 20})  # fmt: skip
    result = cli("run", "--job", str(job))
    assert result.code == 0 and result.last()["trained"]
    complete = result.last()
    assert complete["elapsedSeconds"] <= 20 + 2
    assert "Job time budget reached" in complete["publication"]["reason"]
    # The budget clock runs from before `started` to `complete`: the whole job, publication
    # included, is on it (process start-up and imports, before `started`, are not). Event
    # times are wall-clock milliseconds.
    span = (complete["time"] - result.events[0]["time"]) / 1000
    assert result.events[0]["kind"] == "started" and span <= complete["elapsedSeconds"] + 0.25


def test_rerun_with_the_same_job_id_keeps_both_logs(cli, synth_copy: Path) -> None:
    job = json.loads(write_job(synth_copy, **{**UNPROBED, "maxStepsPerJob": 1}).read_text())
    job["jobId"] = "nightly"
    path = synth_copy / "job-named.json"
    path.write_text(json.dumps(job))
    first = cli("run", "--job", str(path))
    second = cli("run", "--job", str(path))
    job_dir = synth_copy / "training" / "jobs" / "nightly"
    assert parse_events((job_dir / "events.1.ndjson").read_text()) == first.events
    assert parse_events((job_dir / "events.ndjson").read_text()) == second.events
