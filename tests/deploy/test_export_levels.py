"""A policy with value levels exports to ONNX giving each levelled column's expected level, as
torch does; the runtime sends it as levels (tests/runtime/test_levels_sent.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import (
    MODEL_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.deploy.export import export_onnx
from rovertrain.learn.levels import discover_levels
from rovertrain.learn.policy import Policy

onnxruntime = pytest.importorskip("onnxruntime")


def test_the_exported_graph_gives_the_expected_levels_torch_gives() -> None:
    rng = np.random.default_rng(0)
    values = np.zeros((90, SLOTS, VALUES), dtype=np.float32)
    available = np.zeros((90, SLOTS, VALUES), dtype=np.uint8)
    values[:, 1, 0] = rng.choice([-0.6, 0.0, 0.4], 90)  # throttle: three keys
    values[:, 1, 1] = rng.uniform(-1, 1, 90)  # turn: an analogue stick
    available[:, 1, :2] = 1
    torch.manual_seed(1)
    policy = Policy()
    policy.use_levels(discover_levels(values, available))
    policy.eval()
    session = onnxruntime.InferenceSession(export_onnx(policy), providers=["CPUExecutionProvider"])
    images = rng.integers(0, 256, (16, MODEL_CHANNELS, OBS_HEIGHT, OBS_WIDTH), dtype=np.uint8)
    states = rng.random((16, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32)
    logits, sent = session.run(None, {"images": images, "states": states})
    with torch.no_grad():
        torch_logits, torch_sent = policy(torch.from_numpy(images), torch.from_numpy(states))
    np.testing.assert_allclose(logits, torch_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(sent, torch_sent.numpy(), atol=1e-5)
    with torch.no_grad():
        _, _, _, level_logits = policy(
            torch.from_numpy(images), torch.from_numpy(states), auxiliary=True
        )
    chances = torch.softmax(level_logits[:, 1, 0, :3], dim=1).numpy()
    expected = chances @ np.array([-0.6, 0.0, 0.4], dtype=np.float32)
    np.testing.assert_allclose(sent[:, 1, 0], expected, atol=1e-5)  # the throttle's keys
    assert len({round(float(v), 4) for v in sent[:, 1, 1]}) > 3  # regressed, not levelled
