"""Train while it helps: the patience rule (pure) and keeping the best weights."""

from __future__ import annotations

import torch
from windows_fixture import learnable_windows

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.learn.averaging import WeightAverage, warmed_decay
from rovertrain.learn.losses import loss_setup
from rovertrain.learn.patience import Patience
from rovertrain.learn.policy import Policy
from rovertrain.learn.selection import BestWeights


def test_patience_counts_measurements_without_a_new_best() -> None:
    rule = Patience(patience=2)
    assert rule.observe(100, 1.0) and not rule.converged()
    assert rule.observe(200, 0.8)
    assert not rule.observe(300, 0.7999)  # below the minimum improvement: noise
    assert not rule.converged()
    assert not rule.observe(400, 0.9)
    assert rule.converged() and rule.best_step == 200 and rule.best_loss == 0.8
    assert rule.observe(500, 0.5) and not rule.converged()  # a later best resets the count


def test_patience_zero_never_converges() -> None:
    rule = Patience(patience=0)
    for step, loss in enumerate([1.0, 2.0, 3.0, 4.0]):
        rule.observe(step, loss)
    assert not rule.converged() and rule.best_step == 0


def test_the_best_weights_are_put_back_at_the_end() -> None:
    windows = learnable_windows(48)
    torch.manual_seed(0)
    model = Policy()
    best = BestWeights(model, windows, loss_setup(windows, initial_schema()), 16, 10, 1)
    best.on_step(10)
    kept = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    with torch.no_grad():  # worse weights: the selection loss rises
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
    best.on_step(15)  # not a measurement step
    assert best.rule.measurements == 1
    summary = best.finish(17)
    assert best.converged()
    assert summary.measurements == 2 and summary.best_step == 10 and summary.restored_best
    assert summary.last_loss is not None and summary.best_loss is not None
    assert summary.last_loss > summary.best_loss
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, kept[name]), name


def test_without_selection_windows_nothing_is_measured_or_restored() -> None:
    windows = learnable_windows(8).subset(slice(0, 0))
    model = Policy()
    best = BestWeights(model, windows, loss_setup(learnable_windows(8), initial_schema()), 8, 1, 3)
    best.on_step(1)
    summary = best.finish(2)
    assert not best.converged() and summary.measurements == 0 and not summary.restored_best


def test_the_decay_warms_up_to_its_setting() -> None:
    assert warmed_decay(0.995, 0) == 0.1  # the first update nearly takes the weights as they are
    assert warmed_decay(0.995, 90) == 0.91
    assert warmed_decay(0.995, 10_000) == 0.995
    decays = [warmed_decay(0.99, n) for n in range(2000)]
    assert decays == sorted(decays) and max(decays) == 0.99


def test_the_average_follows_the_trained_weights_with_its_decay() -> None:
    torch.manual_seed(0)
    model = Policy()
    average = WeightAverage(model, 0.5)
    start = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)
    average.update()  # warm-up decay 0.1: 90% of the way
    for before, averaged in zip(start, average.model.parameters(), strict=True):
        assert torch.allclose(averaged, before + 0.9)
    for _ in range(30):  # decay 0.5 from the third update on: converges on the weights
        average.update()
    for trained, averaged in zip(model.parameters(), average.model.parameters(), strict=True):
        assert torch.allclose(averaged, trained, atol=1e-6)
        assert averaged.data_ptr() != trained.data_ptr()  # a copy, not the same tensor


def test_with_an_average_the_average_is_measured_kept_and_published() -> None:
    windows = learnable_windows(48)
    torch.manual_seed(0)
    model = Policy()
    setup = loss_setup(windows, initial_schema())
    best = BestWeights(model, windows, setup, 16, 2, 0, average_decay=0.9)
    assert best.average is not None
    for step in (1, 2):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.01)
        best.on_step(step)
    assert best.average.updates == 2 and best.rule.measurements == 1
    averaged = {name: t.clone() for name, t in best.average.model.state_dict().items()}
    summary = best.finish(2)  # already measured at step 2: not measured twice
    assert summary.measurements == 1 and summary.average_decay == 0.9
    assert summary.to_json()["weightAverageDecay"] == 0.9
    for name, tensor in model.state_dict().items():  # the trained model now holds the average
        assert torch.equal(tensor, averaged[name]), name
