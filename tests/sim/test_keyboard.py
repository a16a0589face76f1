"""The keyboard page (pure): levels only, repeats while held, rest on release, taps that
follow a wish between levels."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.sim.keyboard import REPEAT_MS, SHORTEST_PRESS_MS, Finger, KeyboardPage, Keys

TURN = Keys((-0.8, 0.8))
SPEED = Keys((0.6,))


def held_over(finger: Finger, wish: float, seconds: float, step_ms: float = 10.0) -> list[float]:
    return [finger.press(k * step_ms, wish) for k in range(int(seconds * 1000 / step_ms))]


@settings(max_examples=40, deadline=None)
@given(st.floats(-1.0, 1.0))
def test_a_finger_holds_levels_only_and_follows_the_wish_on_average(wish: float) -> None:
    levels = held_over(Finger(TURN), wish, 20.0)
    assert set(levels) <= {-0.8, 0.0, 0.8}
    expected = max(-0.8, min(0.8, wish))
    assert abs(sum(levels) / len(levels) - expected) < 0.03


def test_a_tap_lasts_at_least_the_shortest_press() -> None:
    levels = held_over(Finger(TURN), 0.1, 10.0)
    runs, length = [], 1
    for before, after in itertools.pairwise(levels):
        if after == before:
            length += 1
        else:
            runs.append(length)
            length = 1
    assert len(runs) > 10  # it taps
    assert min(runs[1:]) * 10.0 >= SHORTEST_PRESS_MS  # runs[0]: before the first press


def test_the_page_sends_on_a_change_and_repeats_while_a_key_is_held() -> None:
    page = KeyboardPage({"speed": SPEED, "turn": TURN})
    sent = [(t, page.offer(t, {"speed": 0.6, "turn": 0.0})) for t in range(0, 2000, 10)]
    times = [t for t, values in sent if values is not None]
    assert times == list(range(0, 2000, int(REPEAT_MS)))  # up held: repeated
    assert all(v == {"speed": 0.6, "turn": 0.0} for _, v in sent if v is not None)


def test_released_keys_send_the_rest_level_once() -> None:
    page = KeyboardPage({"speed": SPEED, "turn": TURN})
    assert page.offer(0.0, {"speed": 0.6, "turn": 0.0}) == {"speed": 0.6, "turn": 0.0}
    sent = [page.offer(t, {"speed": 0.0, "turn": 0.0}) for t in range(200, 3000, 10)]
    assert [v for v in sent if v is not None] == [{"speed": 0.0, "turn": 0.0}]


def test_release_then_a_wish_sends_at_once() -> None:
    page = KeyboardPage({"speed": SPEED, "turn": TURN})
    page.offer(0.0, {"speed": 0.6, "turn": 0.0})
    assert page.release(50.0) == {"speed": 0.0, "turn": 0.0}
    assert page.offer(60.0, {"speed": 0.6, "turn": 0.0}) is None  # the shortest press
    assert page.offer(50.0 + SHORTEST_PRESS_MS, {"speed": 0.6, "turn": 0.0}) == {
        "speed": 0.6,
        "turn": 0.0,
    }
