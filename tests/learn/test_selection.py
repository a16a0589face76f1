"""Train while it helps: the patience rule (pure) and keeping the best weights."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st
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


# The selection loss of a warehouse job (continuous driver, data seed 3, job seed 0, AVX2,
# fp32), measured every 200 steps: down to step 1200, level to 2200, then down by a fifth to
# 4400 as the policy learned the pallets. Five measurements without a new best stopped it at
# 2200, refused by the gate; trained on, it passed and stopped for 16 of 16 pallets.
WAREHOUSE_LEVEL = [
    (200, 0.45130), (400, 0.40766), (600, 0.40486), (800, 0.38557), (1000, 0.37915),
    (1200, 0.37046), (1400, 0.37732), (1600, 0.37575), (1800, 0.38782), (2000, 0.37551),
    (2200, 0.37246), (2400, 0.35261), (2600, 0.33507), (2800, 0.31276), (3000, 0.30276),
    (3200, 0.29305), (3400, 0.28987), (3600, 0.28931), (3800, 0.27462), (4000, 0.26686),
    (4200, 0.26171), (4400, 0.25875), (4600, 0.26454), (4700, 0.26211),
]  # fmt: skip


def test_a_level_before_the_picture_is_learned_does_not_end_training() -> None:
    rule = Patience(patience=5)
    for step, loss in WAREHOUSE_LEVEL:
        rule.observe(step, loss)
        assert not rule.converged(), step
    assert rule.best_step == 4400


def test_the_wait_grows_with_the_measurements_that_led_to_the_best() -> None:
    rule = Patience(patience=2)
    for step, loss in enumerate([1.0, 0.9, 0.8, 0.7], start=1):
        assert rule.observe(step, loss)  # the best at the 4th measurement
    for step in range(5, 8):
        rule.observe(step, 0.75)
        assert not rule.converged(), step  # 3 without a new best: not as many as led to it
    rule.observe(8, 0.75)
    assert rule.converged() and rule.best_step == 4


@given(st.integers(1, 8), st.lists(st.floats(0.1, 2.0), min_size=1, max_size=60))
def test_convergence_waits_for_patience_and_as_long_again(
    patience: int, losses: list[float]
) -> None:
    rule = Patience(patience=patience)
    for step, loss in enumerate(losses, start=1):
        rule.observe(step, loss)
        if rule.converged():
            since = step - rule.best_step
            assert since >= patience and since >= rule.best_step
            return


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
    assert [step for step, _ in summary.losses] == [10, 17]  # the curve, every measurement
    assert summary.losses == ((10, summary.best_loss), (17, summary.last_loss))
    assert summary.to_json()["losses"] == [[10, round(summary.best_loss, 6)],
                                           [17, round(summary.last_loss, 6)]]  # fmt: skip
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
