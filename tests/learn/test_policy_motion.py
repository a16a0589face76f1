"""The two heads' inputs (policy version 3): what each may read, checked on the network itself."""

from __future__ import annotations

import torch

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import (
    MODEL_CHANNELS,
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.learn.policy import Policy

STATE_SIZE = SLOTS * STATE_FEATURES_PER_SLOT


def _inputs(count: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    images = torch.randint(
        0, 256, (count, MODEL_CHANNELS, OBS_HEIGHT, OBS_WIDTH), generator=generator
    ).to(torch.uint8)
    states = torch.rand(count, STATE_SIZE, generator=generator)
    return images, states


def _policy() -> Policy:
    torch.manual_seed(0)
    return Policy().eval()


def test_the_event_head_never_sees_the_previous_picture() -> None:
    # Two identical pictures mean "a stop is being re-sent" in a teleop log: the event head
    # would learn that shortcut instead of the obstacle (docs/learning.md).
    policy, (images, states) = _policy(), _inputs()
    still = images.clone()
    still[:, OBS_CHANNELS:] = images[:, :OBS_CHANNELS]
    with torch.no_grad():
        logits, values = policy(images, states)
        still_logits, still_values = policy(still, states)
    assert torch.equal(logits, still_logits)
    assert not torch.allclose(values, still_values)  # the value head sees the motion


def test_the_auxiliary_values_come_from_the_event_trunk() -> None:
    policy, (images, states) = _policy(), _inputs()
    with torch.no_grad():
        logits, values, shared, _ = policy(images, states, auxiliary=True)
        plain_logits, plain_values = policy(images, states)
    assert torch.equal(logits, plain_logits) and torch.equal(values, plain_values)
    assert shared.shape == values.shape == (4, SLOTS, VALUES)
    assert not torch.allclose(shared, values)


def test_each_loss_trains_what_it_should() -> None:
    policy, (images, states) = _policy(), _inputs()
    policy.train()
    logits, _, shared, _ = policy(images, states, auxiliary=True)
    (logits.sum() + shared.sum()).backward()
    # The event loss and the auxiliary one never train the value head's own path ...
    own = (*policy.motion.parameters(), *policy.value_state.parameters())
    assert all(p.grad is None or not p.grad.any() for p in own)
    assert any(p.grad is not None and p.grad.any() for p in policy.vision.parameters())
    policy.zero_grad(set_to_none=True)
    _, values = policy(images, states)
    values.sum().backward()
    # ... and the value loss trains it, never the shared encoder or the event trunk: those
    # train exactly as with one head (variant G, docs/learning.md).
    assert all(p.grad is not None and p.grad.any() for p in policy.motion.parameters())
    shared = (*policy.vision.parameters(), *policy.trunk.parameters())
    assert all(p.grad is None or not p.grad.any() for p in shared)


def test_the_value_head_reads_the_motion_along_the_height_not_across() -> None:
    # A sideways shift of the previous picture (the rover turning) does not reach the values;
    # a shift along the height (the ground coming closer: speed) does.
    policy, (images, states) = _policy(), _inputs()
    turned, closer = images.clone(), images.clone()
    turned[:, OBS_CHANNELS:] = torch.roll(images[:, OBS_CHANNELS:], 7, dims=3)
    closer[:, OBS_CHANNELS:] = torch.roll(images[:, OBS_CHANNELS:], 3, dims=2)
    with torch.no_grad():
        _, values = policy(images, states)
        _, turned_values = policy(turned, states)
        _, closer_values = policy(closer, states)
    assert torch.allclose(values, turned_values, atol=1e-6)
    assert not torch.allclose(values, closer_values, atol=1e-4)


def test_the_value_path_is_told_apart_by_name_also_under_ddp() -> None:
    from rovertrain.learn.policy import in_value_path

    policy = _policy()
    own = {
        id(p)
        for module in (
            policy.motion,
            policy.value_state,
            policy.value_trunk,
            policy.values,
            policy.levels,
        )
        for p in module.parameters()
    }
    for name, parameter in policy.named_parameters():
        assert in_value_path(name) == (id(parameter) in own), name
        assert in_value_path("module." + name) == in_value_path(name)
    assert not in_value_path("shared_values.weight")


def test_each_clip_group_is_clipped_on_its_own() -> None:
    """Huge value-path gradients are cut to norm 1 without shrinking the shared part's."""
    import math

    from rovertrain.learn.policy import in_value_path
    from rovertrain.learn.train import ClipGroups

    policy = _policy()
    groups = ClipGroups.of(policy)
    names = dict(policy.named_parameters())
    assert len(groups.shared) + len(groups.values) == len(names)
    assert {id(p) for p in groups.values} == {
        id(p) for name, p in names.items() if in_value_path(name)
    }
    for parameter in groups.shared:
        parameter.grad = torch.full_like(parameter, 1e-4)
    for parameter in groups.values:
        parameter.grad = torch.full_like(parameter, 10.0)
    shared_before = torch.cat([p.grad.flatten() for p in groups.shared]).norm().item()
    values_before = torch.cat([p.grad.flatten() for p in groups.values]).norm().item()
    assert shared_before < 1.0 < values_before
    norm = groups.clip(1.0)
    assert math.isclose(norm, math.hypot(shared_before, values_before), rel_tol=1e-5)
    shared_after = torch.cat([p.grad.flatten() for p in groups.shared]).norm().item()
    values_after = torch.cat([p.grad.flatten() for p in groups.values]).norm().item()
    assert math.isclose(shared_after, shared_before, rel_tol=1e-6)
    assert math.isclose(values_after, 1.0, rel_tol=1e-4)
