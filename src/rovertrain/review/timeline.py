"""A session on the page's timeline: its commands, and where a model's replay disagrees.

Times are on the session's command clock (ms), as in commands.ndjson and curation.json; the
page maps a video time to it with the recording's `video.offsetMs`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import TICK_MS
from rovertrain.data.recording import Recording, read_command_log

# Values further apart than this, where both send, are a disagreement: a quarter of the
# nominal [-1, 1] range is a visibly different command on any rover (half a turn key).
VALUE_TOLERANCE = 0.25
# A disagreement shorter than this many ticks is noise of the decision threshold, not a
# stretch worth a look; gaps up to MERGE_TICKS join two stretches into one.
MIN_TICKS = 3
MERGE_TICKS = 2


def session_commands(recording: Recording) -> list[JsonObject]:
    """Every command of the log, in time order, as the page draws it."""
    log = read_command_log(recording)
    return [
        {"t": command.t, "type": command.type, "values": dict(command.values), "by": command.by}
        for command in log.commands
    ]


@dataclass(frozen=True)
class Decision:
    """One replayed tick: per type, whether model and person sent and what."""

    t: float
    usable: bool
    types: Mapping[str, Mapping[str, object]]


def decisions_of(events: Iterable[Mapping[str, object]]) -> list[Decision]:
    """The `prediction` events of a replay log."""
    found = []
    for event in events:
        if event.get("kind") != "prediction":
            continue
        t, types = event.get("t"), event.get("types")
        if isinstance(t, int | float) and isinstance(types, dict):
            found.append(Decision(float(t), event.get("usable") is not False, types))
    return found


def tick_disagrees(decision: Decision) -> bool:
    """The model would have sent something else than the person in this window: a command
    the person did not send, none where the person sent one, or values a quarter apart."""
    if not decision.usable:
        return False
    for entry in decision.types.values():
        fired, human = bool(entry.get("fire")), bool(entry.get("human"))
        if fired != human:
            return True
        if fired and human and _values_differ(entry.get("values"), entry.get("humanValues")):
            return True
    return False


def _values_differ(model: object, person: object) -> bool:
    if not isinstance(model, dict) or not isinstance(person, dict):
        return False
    for name, value in person.items():
        sent = model.get(name)
        if not isinstance(sent, int | float) or not isinstance(value, int | float):
            continue
        if abs(sent - value) > VALUE_TOLERANCE:
            return True
    return False


def disagreements(decisions: Sequence[Decision]) -> list[tuple[float, float]]:
    """(start, end) ms of the stretches where model and person disagree: ticks that disagree,
    joined across gaps of at most MERGE_TICKS ticks, kept when at least MIN_TICKS long."""
    stretches: list[list[float]] = []
    for decision in decisions:
        if not tick_disagrees(decision):
            continue
        last = stretches[-1] if stretches else None
        if last is not None and decision.t - last[1] <= (MERGE_TICKS + 1) * TICK_MS:
            last[1] = decision.t
        else:
            stretches.append([decision.t, decision.t])
    return [(start, end) for start, end in stretches if (end - start) / TICK_MS + 1 >= MIN_TICKS]


def decision_rows(decisions: Sequence[Decision]) -> list[JsonObject]:
    """The replay's ticks as the page draws them: per type, fired and values."""
    rows: list[JsonObject] = []
    for decision in decisions:
        types: JsonObject = {}
        for name, entry in decision.types.items():
            values = entry.get("values")
            types[name] = {
                "fire": bool(entry.get("fire")),
                "values": dict(values) if isinstance(values, dict) else {},
            }
        rows.append({"t": decision.t, "types": types})
    return rows
