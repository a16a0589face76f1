"""A key the person taps: a release the policy would take back at the next tick is kept back
(`keepPressedAbove`, `runtime.policy.keeps_pressed`), the policy asked once more with the key
released, its answer carried with what earlier sends owe as any spread level is."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rovertrain.contracts.command_schema import SLOTS, VALUES
from rovertrain.contracts.observation import STATE_FEATURES_PER_SLOT
from rovertrain.contracts.runtime_spec import STATE_INPUT, RuntimeSpec, RuntimeSpecError
from rovertrain.runtime.policy import RoverPolicy, keeps_pressed, rest_level
from rovertrain.runtime.state import StateTracker
from runtime.test_steering import FRAME, SCHEMA, policy

TURNS = [-1.0, 0.0, 1.0]
TURN_STATE = 1 * STATE_FEATURES_PER_SLOT + 1  # drive's lastValue[1]: its turn


@pytest.mark.parametrize(
    ("levels", "rest"),
    [((-1.0, 0.0, 1.0), 0.0), ((-0.6, 0.05, 0.4), 0.05), ((0.2, 0.6), 0.2), ((-0.5, 0.5), -0.5)],
)
def test_the_rest_level_is_the_one_nearest_zero(levels: tuple[float, ...], rest: float) -> None:
    assert rest_level(levels) == rest


@pytest.mark.parametrize(
    ("pressed", "again", "rest", "above", "kept"),
    [
        (1.0, 0.9, 0.0, 0.5, True),  # released, it would press the same key again
        (1.0, 0.5, 0.0, 0.5, False),  # half way back is not more than half
        (1.0, 0.3, 0.0, 0.5, False),  # released, it would leave the key up
        (1.0, -0.9, 0.0, 0.5, False),  # released, it would press the other key
        (-1.0, -0.8, 0.0, 0.5, True),  # the same to the other side
        (0.4, 0.3, 0.05, 0.5, True),  # a page's gas (0.4) over its coast (0.05)
        (-0.6, -0.5, 0.05, 0.5, True),  # its brake
        (1.0, 1.0, 0.0, 1.0, False),  # 1: every release is sent
        (0.0, 1.0, 0.0, 0.5, False),  # nothing pressed: nothing to keep
    ],
)
def test_keeps_pressed(pressed: float, again: float, rest: float, above: float, kept: bool) -> None:
    assert keeps_pressed(pressed, again, rest, above) is kept


@given(
    st.floats(-1, 1, allow_nan=False),
    st.floats(-1, 1, allow_nan=False),
    st.floats(-1, 1, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
)
def test_a_release_is_kept_only_toward_the_pressed_level(
    pressed: float, again: float, rest: float, above: float
) -> None:
    """Never when asked it would stay at the rest level or go the other way; never at 1."""
    kept = keeps_pressed(pressed, again, rest, above)
    if kept:
        assert pressed != rest and above < 1.0
        assert np.sign(again - rest) == np.sign(pressed - rest) != 0  # the same side of rest
        assert abs(again - rest) > above * abs(pressed - rest)


class KeySession:
    """Stands in for onnxruntime: `drive` fires at every tick; the expected turn is what a
    tapping person's model gives: a release (0) where the state shows the key pressed, and
    `asked` where it shows the key up."""

    def __init__(self, asked: float) -> None:
        self.asked = asked
        self.calls = 0

    def run(self, _outputs: Any, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        logits = np.full((1, SLOTS), -30.0, dtype=np.float32)
        logits[0, 1] = 3.0  # drive fires (p 0.95)
        values = np.zeros((1, SLOTS, VALUES), dtype=np.float32)
        pressed = abs(float(feeds[STATE_INPUT][0, TURN_STATE])) > 0.5
        values[0, 1, :2] = (0.5, 0.0 if pressed else self.asked)
        return logits, values


def tapping(asked: float, keep: float | None, spread: Any = None) -> tuple[RoverPolicy, KeySession]:
    """A version 6 export whose turn is tapped (`spread`), run on a `KeySession`."""
    written = dict(policy(None)[0].spec.policy.written)
    written["output"] = {
        "values": {
            "levels": {"drive": {"turn": TURNS}},
            "levelOutput": "expected",
            "spread": {"drive": ["turn"]} if spread is None else spread,
        }
    }
    rules = {"threshold": 0.5} if keep is None else {"threshold": 0.5, "keepPressedAbove": keep}
    session = KeySession(asked)
    return RoverPolicy(session, RuntimeSpec.from_json({**written, **rules})), session


def pressed_then_ticked(rover: RoverPolicy) -> Any:
    rover.observe_command(50, "drive", {"speed": 0.5, "turn": 1.0}, by="policy")
    return rover.tick(FRAME, 100)


def test_a_release_it_would_take_back_is_kept_back_and_owes_the_difference() -> None:
    rover, session = tapping(asked=0.9, keep=0.5)
    decision = pressed_then_ticked(rover)
    assert session.calls == 2  # the tick, and the question with the key released
    assert decision.send["drive"] and decision.values["drive"]["turn"] == 1.0
    assert decision.kept == {"drive": ("turn",)}
    # The key held stands for the answer with the key up (0.9): 0.1 more than it was.
    assert rover.owed[("drive", "turn")] == pytest.approx(0.9 - 1.0)
    # The question changed nothing: the next tick's state shows only what was observed.
    tracker = StateTracker(SCHEMA)
    tracker.observe(50, "drive", {"speed": 0.5, "turn": 1.0})
    assert np.array_equal(rover.tracker.state_at(200), tracker.state_at(200))


def test_the_question_comes_after_a_command_observed_beyond_the_tick() -> None:
    """A loop may observe a command stamped after the tick it then runs (it counts from a
    later tick): the question puts the release after it, and nothing goes backwards."""
    rover, session = tapping(asked=0.9, keep=0.5)
    rover.observe_command(50, "drive", {"speed": 0.5, "turn": 1.0}, by="policy")
    rover.observe_command(130, "horn", {})
    decision = rover.tick(FRAME, 100)
    assert session.calls == 2 and decision.kept == {"drive": ("turn",)}
    assert rover.tick(FRAME, 200).t_ms == 200.0


def test_a_release_it_would_not_take_back_is_sent() -> None:
    rover, session = tapping(asked=0.3, keep=0.5)
    decision = pressed_then_ticked(rover)
    assert session.calls == 2
    assert decision.send["drive"] and decision.values["drive"]["turn"] == 0.0
    assert decision.kept == {}


@pytest.mark.parametrize("keep", [1.0, None])  # None: runtime.json from before the knob
def test_every_release_is_sent_at_1_and_by_exports_from_before_the_knob(
    keep: float | None,
) -> None:
    rover, session = tapping(asked=0.9, keep=keep)
    decision = pressed_then_ticked(rover)
    assert rover.keep_pressed_above == 1.0 and session.calls == 1
    assert decision.values["drive"]["turn"] == 0.0


def test_only_tapped_values_and_only_releases_are_asked_about() -> None:
    rover, session = tapping(asked=0.9, keep=0.5, spread={})  # the turn held, not tapped
    assert pressed_then_ticked(rover).values["drive"]["turn"] == 0.0 and session.calls == 1
    rover, session = tapping(asked=0.9, keep=0.5)
    decision = rover.tick(FRAME, 100)  # nothing pressed yet: a press is never held back
    assert decision.values["drive"]["turn"] == 1.0 and session.calls == 1


def test_a_spread_value_that_is_not_levelled_is_refused() -> None:
    with pytest.raises(RuntimeSpecError, match="spread"):
        tapping(asked=0.9, keep=0.5, spread={"drive": ["speed"]})


def held_share(asked: float, ticks: int = 200) -> float:
    """Drive a `KeySession` rover as a rover loop does (each send observed at its tick) from
    a press, and return the share of ticks after which the key was down."""
    rover, _ = tapping(asked=asked, keep=0.5)
    rover.observe_command(50, "drive", {"speed": 0.5, "turn": 1.0}, by="policy")
    turn, down = 1.0, 0
    for tick in range(1, ticks + 1):
        decision = rover.tick(FRAME, 100 * tick)
        if decision.send["drive"]:
            turn = decision.values["drive"]["turn"]
            rover.observe_command(100 * tick, "drive", decision.values["drive"], by="policy")
        down += turn == 1.0
    return down / ticks


@pytest.mark.parametrize("asked", [0.55, 0.7, 0.9])
def test_a_kept_key_is_held_for_the_share_the_answers_add_up_to(asked: float) -> None:
    """A person who holds a speed by tapping presses again after every release, so asked
    with the key up a policy always expects the press back; keeping every such release
    would hold the key for good (a CarRacing policy drove off the track too fast). With
    what is owed carried on, the key is down for the share of the time it is asked for."""
    assert held_share(asked) == pytest.approx(asked, abs=0.03)
