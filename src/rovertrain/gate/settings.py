"""The knobs of the rules in gate/: the imitation gate's thresholds (the job file's `gate`)
and when a candidate may be promoted (in the job file's `config`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rovertrain.contracts.settings import knob, settings_json


@dataclass(frozen=True)
class Gate:
    """The imitation gate: what the held-out evaluation must show before a model is promoted
    (docs/learning.md has the measurements the defaults come from)."""

    minHeldOutSessions: int = knob(
        2, 0, 1_000_000, integer=True, doc="held-out sessions needed before the gate decides"
    )
    minHeldOutWindows: int = knob(
        128,
        0,
        100_000_000,
        integer=True,
        doc="held-out 100 ms windows needed before the gate decides",
    )
    minCommandEvents: int = knob(
        32,
        0,
        100_000_000,
        integer=True,
        doc="held-out command events (windows where a person sent something) needed",
    )
    minStopEvents: int = knob(
        8,
        0,
        100_000_000,
        integer=True,
        doc="held-out stop-role events needed (when the recordings use a stop-role command: "
        "stopConditionsApplied)",
    )
    minMovementEvents: int = knob(
        16, 0, 100_000_000, integer=True, doc="held-out movement-role events needed"
    )
    minMovementRecall: float = knob(0.5, 0, 1, doc="recall of the movement-role events, at least")
    minPrecision: float = knob(
        0.5,
        0,
        1,
        doc="precision of the fired events of the stop- and movement-role types, at least, a "
        "fire in the window before the person's command of its type counted as on time "
        "(`timelyPrecision`; a signal such as a horn is reported per type: docs/learning.md)",
    )
    minRecall: float = knob(
        0.5, 0, 1, doc="recall of the command events of the stop- and movement-role types, at least"
    )
    minStopRecall: float = knob(
        0.5,
        0,
        1,
        doc="recall of the stop-role events, at least (when the recordings use a stop-role "
        "command: stopConditionsApplied)",
    )
    maxNumericMse: float = knob(
        0.1,
        0,
        1_000_000,
        doc="mean squared error of the predicted values on the held-out commands, at most "
        "(the regressed values: values sent at levels are judged against the copycat and "
        "grey frames)",
    )
    minVisionGain: float = knob(
        0.05,
        -1,
        1,
        doc="held-out command F1 with the camera minus F1 of the same weights with constant "
        "grey frames; the camera must reach this, minChangeVisionGain or minValueVisionGain "
        "(docs/learning.md)",
    )
    minChangeVisionGain: float = knob(
        0.05,
        -1,
        1,
        doc="held-out recall of the commands that change what the rover does, with the camera "
        "minus with constant grey frames; the camera must reach this, minVisionGain or "
        "minValueVisionGain (a model that ignores the camera gains 0 on all three)",
    )
    minValueVisionGain: float = knob(
        0.1,
        -1,
        1,
        doc="the share of the held-out value error with constant grey frames that the camera "
        "removes (1 - numericMse / blind numericMse); reaching it also shows the camera adds "
        "(it decides what to send where the teleop page decides when: docs/learning.md)",
    )
    maxValueErrorVsHoldLast: float = knob(
        0.9,
        0,
        1_000_000,
        doc="value MSE on the commands that change what the rover does, over the "
        "repeat-the-last-command baseline's, at most",
    )

    def to_json(self) -> dict[str, Any]:
        return settings_json(self)


FIELD_RECORD, ALWAYS = "fieldRecord", "always"
CANARY_WHEN = (FIELD_RECORD, ALWAYS)


@dataclass(frozen=True)
class Publication:
    """Publication: how much driving, and how many steps, before a candidate is promoted."""

    checkpointEverySteps: int = knob(200, 0, 100_000_000, integer=True, doc="publish interval")
    minimumDrivingMinutes: float = knob(2.0, 0, 1_000_000, doc="distinct minutes to publish")
    newDrivingMinutesPerModel: float = knob(0.5, 0, 1_000_000, doc="new minutes per model")
    canaryMinutes: float = knob(
        3.0,
        0,
        1_000_000,
        doc="0: off. Otherwise a candidate that passes is published as a canary, not "
        "promoted (when `canaryWhen` says): a later job promotes it once recordings show it "
        "drove under supervision this many minutes with fewer take-overs per 10 minutes than "
        'the current model (docs/learning.md, "Promotion from the field")',
        before=0.0,
    )
    canaryWhen: str = knob(
        FIELD_RECORD,
        choices=CANARY_WHEN,
        doc=f"{FIELD_RECORD}: a canary once the current model drove under supervision in the "
        f"job's recordings (the fleet runs the field loop; before, a candidate is promoted); "
        f"{ALWAYS}: a canary whenever there is a current model",
    )
