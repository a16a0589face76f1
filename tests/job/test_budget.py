"""The job's budget rules (job/budget.py): enough data to train at all, and when training
stops so that evaluation and publication still fit."""

from __future__ import annotations

import pytest

from rovertrain.job.budget import not_enough_data, training_deadline


def test_not_enough_data_and_the_training_deadline() -> None:
    assert not_enough_data(10, True, True, 5) == "Stopped/time limit"
    assert not_enough_data(4, True, False, 5) is not None
    assert not_enough_data(10, False, False, 5) is not None
    assert not_enough_data(10, True, False, 5) is None
    assert training_deadline(600, 1000) == pytest.approx(600 - 7.0)
    assert training_deadline(8, 10_000) == pytest.approx(6.0)  # never more than a quarter
