"""When a command fires: where the export says how training weighed the events
(`output.eventWeights`), when the chance that the person would have sent the type since it was
last sent reaches the threshold (`RoverPolicy.fires`); an export without them fires at
probability >= the threshold, as it was trained."""

from __future__ import annotations

from typing import Any

import pytest

from rovertrain.contracts.runtime_spec import RuntimeSpecError
from rovertrain.runtime.policy import RoverPolicy, person_chance, unsent_after
from runtime.test_steering import FRAME, ROLES, ScriptedSession, policy

UNWEIGHTED = {"stop": 1.0, "drive": 1.0, "horn": 1.0}


def weighted(weights: Any) -> tuple[RoverPolicy, ScriptedSession]:
    return policy(None, event_weights=weights)


def test_the_chances_since_the_last_send_add_up_and_a_send_starts_them_again() -> None:
    rover, session = weighted(UNWEIGHTED)
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    session.p["horn"] = 0.3
    assert not rover.tick(FRAME, 100).fire["horn"]  # 0.3
    assert rover.tick(FRAME, 200).fire["horn"]  # 1 - 0.7 * 0.7 = 0.51
    assert rover.tick(FRAME, 300).fire["horn"]  # not sent: still due
    rover.observe_command(300, "horn")
    assert not rover.tick(FRAME, 400).fire["horn"]  # sent: the person's chance starts again
    assert rover.tick(FRAME, 500).fire["horn"]


def test_a_weighted_stop_fires_when_half_the_people_would_have_stopped() -> None:
    """Balanced with weight 20, probability 0.6 is a 7% chance in each window: the stop goes
    out at the tenth window, when 1 - 0.93^n reaches 0.5; the event head alone fires at the
    first."""
    rover, session = weighted({"stop": 20.0, "drive": 1.0, "horn": 1.0})
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    session.p["stop"] = 0.6
    fired = [rover.tick(FRAME, 100 * (k + 1)).fire["stop"] for k in range(12)]
    assert fired.index(True) == 9
    assert person_chance(0.6, 20.0) == pytest.approx(0.6 / (0.6 + 20 * 0.4))


@pytest.mark.parametrize(
    ("sent", "previous", "left"),
    [
        ("drive", "drive", {"stop", "horn", "crawl"}),  # a re-send: its own starts again
        ("stop", "drive", {"horn"}),  # the rover stops: every stop/movement type again
        ("drive", "stop", {"horn"}),  # it moves again
        ("drive", None, {"horn"}),  # the first of them
        ("crawl", "drive", {"horn"}),  # another movement type is a switch too
        ("horn", "drive", {"stop", "drive", "crawl"}),  # a signal switches nothing
    ],
)
def test_what_a_send_starts_again(sent: str, previous: str | None, left: set[str]) -> None:
    unsent = {"stop": 0.9, "drive": 0.8, "horn": 0.7, "crawl": 0.6}
    kept = unsent_after(unsent, sent, previous, ROLES)
    assert set(kept) == left and all(kept[kind] == unsent[kind] for kind in kept)


def test_a_stop_starts_the_restart_question_again() -> None:
    """The drive's chances while it drove do not carry over its own stop: standing, the
    restart fires on what the person would do now."""
    rover, session = weighted(UNWEIGHTED)
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    session.p["drive"] = 0.4
    assert not rover.tick(FRAME, 100).fire["drive"]  # 0.4 since the drive at 0
    rover.observe_command(150, "stop")
    assert not rover.tick(FRAME, 200).fire["drive"]  # 0.4 since the stop, not 0.64
    assert rover.tick(FRAME, 300).fire["drive"]  # 0.64


@pytest.mark.parametrize("weights", [None, {}])
def test_an_export_without_event_weights_fires_at_the_threshold(weights: Any) -> None:
    rover, session = weighted(weights)
    rover.observe_command(0, "drive", {"speed": 0.5, "turn": 0.0})
    session.p["stop"] = 0.6
    assert rover.tick(FRAME, 100).fire["stop"]
    session.p["stop"] = 0.3
    assert not rover.tick(FRAME, 200).fire["stop"]
    assert not rover.tick(FRAME, 300).fire["stop"]  # nothing adds up


@pytest.mark.parametrize(
    "weights", [{"stop": 0.5}, {"stop": "20"}, {"stop": True}, [20.0], {"stop": 1e5}]
)
def test_bad_event_weights_are_refused(weights: Any) -> None:
    with pytest.raises(RuntimeSpecError, match=r"output\.eventWeights"):
        weighted(weights)
