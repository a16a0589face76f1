from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rovertrain.data.command_schema import initial_schema
from rovertrain.job.config import load_job_text
from rovertrain.learn.metrics import (
    event_metrics,
    frequency_baselines,
    gate_reasons,
    publication_reasons,
)

JOB = load_job_text('{"root": "/x", "sessions": []}')
GATE, CONFIG = JOB.gate, JOB.config


def passing() -> dict:
    return {
        "windows": 500, "positiveActions": 100, "stopEvents": 20, "movementEvents": 80,
        "movementRecall": 0.8, "precision": 0.7, "recall": 0.7, "stopRecall": 0.9, "f1": 0.7,
        "numericMse": 0.02,
        "baselines": {"trainingFrequency": [{"rule": "always", "f1": 0.3}]},
    }  # fmt: skip


def test_a_good_evaluation_passes() -> None:
    assert gate_reasons(passing(), GATE, 500, 2, 0) == []


@pytest.mark.parametrize(
    ("change", "args", "reason"),
    [
        ({}, (500, 2, 3), "Held-out controls are not fully represented"),
        ({}, (600, 2, 0), "Evaluation interrupted"),
        ({}, (500, 1, 0), "usable held-out recordings"),
        ({"windows": 100}, (100, 2, 0), "held-out windows"),
        ({"positiveActions": 31}, (500, 2, 0), "held-out command events"),
        ({"stopEvents": 7}, (500, 2, 0), "held-out stop events"),
        ({"movementEvents": 15}, (500, 2, 0), "held-out movement commands"),
        ({"movementRecall": 0.49}, (500, 2, 0), "Movement command recall below"),
        ({"precision": 0.49}, (500, 2, 0), "Command precision below"),
        ({"recall": 0.49}, (500, 2, 0), "Command recall below"),
        ({"stopRecall": 0.49}, (500, 2, 0), "Stop recall below"),
        ({"f1": 0.3}, (500, 2, 0), "does not beat the training-frequency baseline"),
        ({"numericMse": 0.11}, (500, 2, 0), "parameter error above"),
    ],
)
def test_each_gate_condition(change: dict, args: tuple, reason: str) -> None:
    reasons = gate_reasons({**passing(), **change}, GATE, *args)
    assert len(reasons) == 1 and reason in reasons[0]


def test_gate_thresholds_come_from_the_job() -> None:
    strict = replace(GATE, minPrecision=0.8)
    assert any("precision below 0.8" in r for r in gate_reasons(passing(), strict, 500, 2, 0))


def test_publication_reasons() -> None:
    ok = publication_reasons(10, 5, 500, "passed imitation gate", None, CONFIG)
    assert ok == []
    reasons = publication_reasons(
        0.1, 0.0, 1, "imitation gate not met", "Stopped by SIGTERM", CONFIG
    )
    assert reasons == [
        "Collecting distinct driving footage",
        "Waiting for new driving footage since last publication",
        "Training steps below publication interval",
        "imitation gate not met",
        "Stopped by SIGTERM",
    ]


def test_baseline_f1() -> None:
    actual = np.zeros((10, 2), dtype=bool)
    actual[:2, 1] = True  # 2 of 20 window-slots fire
    rows = {row["rule"]: row for row in frequency_baselines(actual, np.array([0.0, 0.2]))}
    # always: fire slot 1 everywhere: precision 2/10, recall 1
    assert rows["always"]["precision"] == pytest.approx(0.2)
    assert rows["always"]["f1"] == pytest.approx(2 * 0.2 / 1.2)
    assert rows["frequency"]["recall"] == pytest.approx(0.2)


def test_event_metrics_counts() -> None:
    schema = initial_schema()
    actual = np.zeros((4, 8), dtype=bool)
    actual[0, 0] = actual[1, 1] = actual[2, 1] = True
    predicted = np.zeros_like(actual)
    predicted[0, 0] = predicted[1, 1] = predicted[3, 1] = True
    values = np.zeros((4, 8, 4), dtype=np.float32)
    targets = values.copy()
    targets[1, 1, 0] = 0.5
    available = np.zeros((4, 8, 4), dtype=bool)
    available[1, 1, 0] = True
    m = event_metrics(predicted, values, actual, targets, available, schema, np.zeros(8))
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["stopRecall"] == 1.0 and m["movementRecall"] == 0.5
    assert m["numericMse"] == pytest.approx(0.25)
