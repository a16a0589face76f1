"""Event metrics and the baselines they are compared with: pure numpy."""

from __future__ import annotations

import numpy as np
import pytest

from rovertrain.data.command_schema import initial_schema
from rovertrain.learn.metrics import event_metrics, frequency_baselines, natural_frequencies


def test_baseline_f1() -> None:
    actual = np.zeros((10, 2), dtype=bool)
    actual[:2, 1] = True  # 2 of 20 window-slots fire
    rows = {row.rule: row.score for row in frequency_baselines(actual, np.array([0.0, 0.2]))}
    # always: fire slot 1 everywhere: precision 2/10, recall 1
    assert rows["always"].precision == pytest.approx(0.2)
    assert rows["always"].f1 == pytest.approx(2 * 0.2 / 1.2)
    assert rows["frequency"].recall == pytest.approx(0.2)


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
    assert m.precision == pytest.approx(2 / 3) and m.recall == pytest.approx(2 / 3)
    assert m.stop_recall == 1.0 and m.movement_recall == 0.5
    assert m.numeric_mse == pytest.approx(0.25)
    document = m.to_json()
    assert document["precision"] == m.precision and document["stopRecall"] == 1.0
    assert [slot["type"] for slot in document["perSlot"]] == ["stop", "drive"]
    assert [row["rule"] for row in document["baselines"]["trainingFrequency"]] == [
        "always",
        "frequency",
    ]


def test_natural_frequencies_per_usable_window() -> None:
    frequencies = natural_frequencies(200, np.array([10, 50, 0]))
    assert frequencies.tolist() == [0.05, 0.25, 0.0]
    assert natural_frequencies(0, np.array([3])).tolist() == [3.0]
