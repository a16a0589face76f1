"""Who becomes a canary (pure): by default (`canaryWhen` fieldRecord) a passing candidate is a
canary once the fleet's model drove under supervision, promoted before; `always`, whenever a
current model exists. A canary on trial holds every later candidate back."""

from __future__ import annotations

import pytest

from rovertrain.gate.canary import CanaryJudgement, CanaryVerdict
from rovertrain.gate.publication import PublicationDecision
from rovertrain.gate.settings import ALWAYS, FIELD_RECORD, Publication
from rovertrain.job.canary import FleetField, canary_decision

PASSED = PublicationDecision(5.0, 5.0, 2.0, 0.5, ())
FAILED = PublicationDecision(5.0, 5.0, 2.0, 0.5, ("Imitation gate not met",))


def test_the_field_loop_is_on_by_default() -> None:
    defaults = Publication()
    assert defaults.canaryMinutes > 0 and defaults.canaryWhen == FIELD_RECORD


@pytest.mark.parametrize(
    ("fleet", "when", "canary"),
    [
        (FleetField(None, has_current=False, current_drove=False), FIELD_RECORD, False),
        (FleetField(None, has_current=True, current_drove=False), FIELD_RECORD, False),
        (FleetField(None, has_current=True, current_drove=True), FIELD_RECORD, True),
        (FleetField(None, has_current=False, current_drove=False), ALWAYS, False),
        (FleetField(None, has_current=True, current_drove=False), ALWAYS, True),
    ],
)
def test_a_passing_candidate_is_a_canary_when_the_rule_says(
    fleet: FleetField, when: str, canary: bool
) -> None:
    decided = canary_decision(PASSED, fleet, when)
    assert decided.canary is canary and decided.promote is not canary


def test_a_failed_candidate_is_never_a_canary_and_a_canary_on_trial_holds_the_next_back() -> None:
    drove = FleetField(None, has_current=True, current_drove=True)
    assert canary_decision(FAILED, drove, FIELD_RECORD).canary is False
    waiting = CanaryJudgement("abc", CanaryVerdict.WAITING, "drove 1.0 of 3 supervised minutes")
    held = canary_decision(PASSED, FleetField(waiting, True, True), FIELD_RECORD)
    assert not held.promote and not held.canary
    assert held.blockers[-1].startswith("Canary abc still on trial")
    promoted = CanaryJudgement("abc", CanaryVerdict.PROMOTED, "fewer take-overs")
    # The promoted canary drove under supervision: the next candidate is the next canary.
    nxt = canary_decision(PASSED, FleetField(promoted, True, True), FIELD_RECORD)
    assert nxt.canary and nxt.judged == promoted
