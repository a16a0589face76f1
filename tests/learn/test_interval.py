"""The held-out F1's interval over sessions (learn/metrics.py::session_f1_interval)."""

from __future__ import annotations

import numpy as np

from rovertrain.learn.metrics import Score, session_f1_interval

BOTH = np.ones(2, dtype=bool)  # both slots scored


def sessions_of(rng: np.random.Generator, hit_rates: list[float], windows: int) -> tuple:
    actual, predicted, session = [], [], []
    for number, rate in enumerate(hit_rates):
        fires = rng.random((windows, 2)) < 0.3
        predicted.append(fires & (rng.random((windows, 2)) < rate))
        actual.append(fires)
        session.append(np.full(windows, number))
    return np.concatenate(predicted), np.concatenate(actual), np.concatenate(session)


def test_the_interval_holds_the_point_estimate_and_narrows_with_more_sessions() -> None:
    rng = np.random.default_rng(0)
    predicted, actual, session = sessions_of(rng, [0.9, 0.3, 0.8, 0.5], 200)
    point = Score.of((predicted & actual).sum(), predicted.sum(), actual.sum()).f1
    few = session_f1_interval(predicted, actual, session, scored=BOTH)
    assert few is not None and few.sessions == 4
    assert few.low < point < few.high
    predicted, actual, session = sessions_of(rng, [0.9, 0.3, 0.8, 0.5] * 10, 200)
    many = session_f1_interval(predicted, actual, session, scored=BOTH)
    assert many is not None and many.high - many.low < (few.high - few.low) / 2


def test_sessions_that_disagree_widen_it_windows_do_not() -> None:
    """One long session of mixed quality is a single sample: no interval from one session;
    equal sessions give a narrow one, however many windows each holds."""
    rng = np.random.default_rng(1)
    predicted, actual, session = sessions_of(rng, [0.6], 5000)
    assert session_f1_interval(predicted, actual, session, scored=BOTH) is None
    alike = session_f1_interval(*sessions_of(rng, [0.6] * 6, 400), scored=BOTH)
    apart = session_f1_interval(*sessions_of(rng, [0.95, 0.2] * 3, 400), scored=BOTH)
    assert alike is not None and apart is not None
    assert apart.high - apart.low > 3 * (alike.high - alike.low)


def test_the_interval_counts_the_scored_slots_only() -> None:
    """A second slot that is all wrong (a horn fired everywhere) lowers the interval only when
    it is scored."""
    rng = np.random.default_rng(3)
    predicted, actual, session = sessions_of(rng, [0.9] * 6, 300)
    noisy_predicted = predicted.copy()
    noisy_predicted[:, 1] = True
    only_first = np.array([True, False])
    clean = session_f1_interval(predicted, actual, session, scored=only_first)
    noisy = session_f1_interval(noisy_predicted, actual, session, scored=only_first)
    counted = session_f1_interval(noisy_predicted, actual, session, scored=BOTH)
    assert clean is not None and noisy is not None and counted is not None
    assert (noisy.low, noisy.high) == (clean.low, clean.high)
    assert counted.high < clean.low
