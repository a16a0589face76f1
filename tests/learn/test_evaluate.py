"""The one forward pass: probabilities, values, loss in the same pass, early stop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from windows_fixture import learnable_windows

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.observation import BLIND_GREY
from rovertrain.learn.batches import batch_tensors
from rovertrain.learn.evaluate import Scoring, blind_score, evaluate, held_out_curve, predict
from rovertrain.learn.losses import loss_setup, losses
from rovertrain.learn.policy import Policy
from rovertrain.learn.probe import probe


def model() -> Policy:
    torch.manual_seed(1)
    return Policy()


def scoring() -> Scoring:
    return Scoring(initial_schema(), 0.5, np.full(8, 0.1), batch_size=8)


def test_predict_covers_every_window_and_computes_the_loss_in_the_same_pass() -> None:
    windows = learnable_windows(70)
    setup = loss_setup(windows, initial_schema())
    policy = model()
    predictions = predict(policy, windows, batch_size=8, setup=setup)
    assert predictions.done == 70 and predictions.probabilities.shape == (70, 8)
    assert ((predictions.probabilities >= 0) & (predictions.probabilities <= 1)).all()
    # The loss is the window-weighted mean of each chunk's loss (chunks of 4 batches), the
    # one-head policy's signal: the events and the event trunk's own values.
    total, all_logits = 0.0, []
    with torch.inference_mode():
        for chunk in (slice(0, 32), slice(32, 64), slice(64, 70)):
            batch = batch_tensors(windows, chunk)
            images = batch.channels_last_images()
            logits, _, shared, _ = policy.eval()(images, batch.states, auxiliary=True)
            event_loss, value_loss = losses(logits, shared, batch, setup)
            total += float(event_loss + value_loss) * len(batch.fires)
            all_logits.append(logits)
    assert predictions.loss == pytest.approx(total / 70, rel=1e-5)
    logits = torch.cat(all_logits)
    assert np.allclose(predictions.probabilities, torch.sigmoid(logits).numpy(), atol=1e-6)


def test_a_stop_request_leaves_a_scored_prefix() -> None:
    windows = learnable_windows(100)
    calls = iter([False, True])
    measured = evaluate(model(), windows, scoring(), should_stop=lambda: next(calls, True))
    assert measured.windows == 32  # one chunk of 4 batches of 8


def test_held_out_curve_reports_the_gate_figures_and_the_loss() -> None:
    windows = learnable_windows(40)
    curve = held_out_curve(model(), windows, scoring(), loss_setup(windows, initial_schema()))
    document = curve.to_json()
    assert set(document) == {
        "precision",
        "timelyPrecision",
        "recall",
        "f1",
        "stopRecall",
        "movementRecall",
        "numericMse",
        "windows",
        "heldOutLoss",
        "changeRecall",
        "changeNumericMse",
        "valueErrorVsHoldLast",
        "visionGain",
        "changeVisionGain",
        "valueVisionGain",
        "blind",
    }
    assert document["windows"] == 40 and document["heldOutLoss"] > 0
    assert document["visionGain"] == pytest.approx(document["f1"] - document["blind"]["f1"])


def test_blind_predictions_see_only_the_state_vector() -> None:
    windows = learnable_windows(40)
    windows.states[:] = windows.states[0]  # every window has the same command history
    policy = model()
    seeing = predict(policy, windows, batch_size=8)
    blind = predict(policy, windows, batch_size=8, blind=True)
    assert np.ptp(seeing.probabilities, axis=0).max() > 1e-4  # bright and dark frames differ
    assert np.ptp(blind.probabilities, axis=0).max() == 0.0
    grey = windows.subset(slice(0, 40))
    grey.frames[:] = BLIND_GREY
    assert np.array_equal(blind.probabilities, predict(policy, grey, batch_size=8).probabilities)


def test_vision_gain_is_f1_with_the_camera_minus_f1_blind() -> None:
    windows = learnable_windows(64)
    policy = model()
    with_camera = evaluate(policy, windows, scoring())
    blind = blind_score(policy, windows, scoring(), with_camera)
    assert blind.metrics.windows == 64
    assert blind.vision_gain == pytest.approx(with_camera.f1 - blind.metrics.f1)
    assert with_camera.hold_last is not None and blind.metrics.hold_last is not None
    seeing, grey = with_camera.hold_last.changes, blind.metrics.hold_last.changes
    assert seeing.events == grey.events > 0  # the same windows, the same human commands
    assert blind.change_gain == pytest.approx(seeing.recall - grey.recall)
    assert blind.metrics.numeric_mse > 0
    assert blind.value_gain == pytest.approx(
        1 - with_camera.numeric_mse / blind.metrics.numeric_mse
    )
    stopped = blind_score(policy, windows, scoring(), with_camera, should_stop=lambda: True)
    assert stopped.metrics.windows == 0 and stopped.vision_gain is None
    assert stopped.change_gain is None and stopped.value_gain is None


def test_the_probe_overfits_a_small_subset() -> None:
    windows = learnable_windows(48)
    result = probe(
        model(), windows, loss_setup(windows, initial_schema()), lambda: False, 30.0, 0.003
    )
    assert result.windows == 48 and result.steps > 0
    assert result.learns, result
