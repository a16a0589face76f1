"""How soon a person re-sends a command that changes nothing, measured on windows built from a
command log exactly as a job builds them."""

from __future__ import annotations

import numpy as np
import pytest

from rovertrain.contracts.command_schema import initial_schema
from rovertrain.data.recording import Command
from rovertrain.data.windows import label_windows
from rovertrain.learn.resends import FEWEST_RESENDS, resend_after_ms, resend_json


def _after(commands: list[Command], seconds: float) -> np.ndarray:
    ticks = np.arange(0, seconds * 1000, 100, dtype=np.int64)
    labels = label_windows(ticks, commands, initial_schema())
    return resend_after_ms(labels.states, labels.fires, labels.values, labels.available)


@pytest.mark.parametrize("period", [250.0, 400.0])
def test_a_held_key_repeated_every_period_is_re_sent_about_then(period: float) -> None:
    # A stop held for 30 s, repeated every `period` ms from 37 ms on (off the tick grid).
    stops = [Command(37.0 + k * period, "stop", {}) for k in range(int(30000 // period))]
    after = _after(stops, 30)
    # At the tick of a window holding a re-send, the last stop is (period - 100, period] old.
    assert period - 100 < after[0] <= period
    assert after[1] == 0  # drive never sent: not measured
    assert resend_json(after, initial_schema()) == {"stop": round(float(after[0]), 1)}


def test_changes_are_not_re_sends_and_too_few_re_sends_say_nothing() -> None:
    turns = [Command(50.0 + k * 300, "drive", {"speed": 0.5, "turn": (-1) ** k}) for k in range(60)]
    assert _after(turns, 20)[1] == 0  # every command changes the turn
    few = [Command(50.0 + k * 300, "stop", {}) for k in range(FEWEST_RESENDS)]
    assert _after(few, 20)[0] == 0  # 19 re-sends of the first stop
