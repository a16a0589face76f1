"""Promotion end to end: a job promotes, `models --current` verifies the pointer, and a
tampered target is reported, never followed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from conftest import Result, no_windows
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.decision import DecisionRules
from rovertrain.job.publication import publish
from rovertrain.learn.policy import Policy

# A short job (seconds of training) on the small synth set, with an imitation gate every
# candidate that beats the frequency baseline passes: what is tested is the promotion, not
# the learning (tests/learn/test_learning_gate.py runs the real gate).
SHORT = {"passesPerJob": 10, "maxStepsPerJob": 60, "minimumSamples": 50, "maxSamples": 2000,
         "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
         "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip
OPEN_GATE = {"minHeldOutSessions": 0, "minHeldOutWindows": 0, "minCommandEvents": 0,
             "minStopEvents": 0, "minMovementEvents": 0, "minMovementRecall": 0,
             "minPrecision": 0, "minRecall": 0, "minStopRecall": 0, "maxNumericMse": 1e6,
             "minVisionGain": -1, "minChangeVisionGain": -1, "minValueVisionGain": -1,
             "maxValueErrorVsHoldLast": 1e6}  # fmt: skip


def current(cli, root: Path) -> dict:
    result: Result = cli("models", str(root), "--current")
    assert result.code == 0 and result.kinds() == ["current"], result.stderr
    event = result.last()
    assert ("NOT USABLE" in result.stderr) is (not event["valid"])
    return event


def check_pointer_and_tampering(cli, root: Path, model_id: str) -> None:
    """The pointer verifies; then each kind of tampering is reported and the target refused."""
    event = current(cli, root)
    assert event["valid"] is True and event["problems"] == []
    assert event["current"]["id"] == model_id
    assert event["current"]["path"] == f"checkpoints/{model_id}"
    directory = root / "training" / "checkpoints" / model_id
    meta_path = directory / "model.json"
    original = meta_path.read_bytes()
    meta = json.loads(original)
    meta["actionThreshold"] = 0.01  # a different model behind the same id
    meta_path.write_text(json.dumps(meta))
    event = current(cli, root)
    assert event["valid"] is False and event["current"]["id"] == model_id
    assert any("sha256" in problem for problem in event["problems"])
    meta_path.write_bytes(original)
    assert current(cli, root)["valid"] is True
    weights = directory / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    event = current(cli, root)
    assert event["valid"] is False
    assert any("weights.safetensors" in problem for problem in event["problems"])


@pytest.mark.slow
@pytest.mark.timeout(900)  # a real job: a minute or two on 2 shared cores
def test_a_real_job_promotes_and_current_json_verifies_it(cli, synth_copy: Path) -> None:
    job = json.loads((synth_copy / "job.json").read_text())
    job["config"].update(SHORT)
    job["gate"] = OPEN_GATE
    path = synth_copy / "job-promote.json"
    path.write_text(json.dumps(job))
    result = cli("run", "--job", str(path))
    assert result.code == 0, result.stderr
    complete = result.last()
    assert complete["promote"] is True, complete["evaluation"].get("gateReasons")
    check_pointer_and_tampering(cli, synth_copy, complete["published"]["id"])


def test_the_jobs_publication_step_promotes_and_current_json_verifies_it(
    cli, tmp_path: Path
) -> None:
    """The fast path of the test above: the job's own `publish` with a promoted candidate."""

    def candidate(promote: bool) -> SimpleNamespace:
        to_json = lambda: {}  # noqa: E731
        return SimpleNamespace(
            job_id="job-1", steps=10, examples=640, training_loss=0.5,
            job=SimpleNamespace(seed=0, decision=DecisionRules(0.5, 0.15),
                                config=SimpleNamespace(to_json=to_json),
                                gate=SimpleNamespace(to_json=to_json)),
            dataset=SimpleNamespace(schema=initial_schema(), accepted=["a"], field_by_model=dict,
                                    training=no_windows()),
            evaluation=SimpleNamespace(status="passed imitation gate", to_json=to_json),
            decision=SimpleNamespace(promote=promote, distinct_minutes=3.0, to_json=to_json),
        )  # fmt: skip

    torch.manual_seed(0)
    state = SimpleNamespace(trained_rovers={"r"}, control_profiles=[])
    promoted = publish(tmp_path, candidate(True), state, Policy())  # type: ignore[arg-type]
    publish(tmp_path, candidate(False), state, Policy())  # type: ignore[arg-type]
    check_pointer_and_tampering(cli, tmp_path, promoted.id)
