"""Event metrics of predictions against what the human sent, and the baselines. Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rovertrain.contracts.command_schema import CHANGE_TOLERANCE, Schema
from rovertrain.contracts.json_types import JsonObject


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    f1: float

    @staticmethod
    def of(true_positive: float, predicted: float, actual: float) -> Score:
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / actual if actual else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return Score(precision, recall, f1)

    def to_json(self) -> JsonObject:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}


@dataclass(frozen=True)
class BaselineScore:
    rule: str
    score: Score

    def to_json(self) -> JsonObject:
        return {"rule": self.rule, **self.score.to_json()}


@dataclass(frozen=True)
class SlotMetrics:
    type: str
    role: str
    events: int
    predicted: int
    score: Score
    numeric_mse: float
    value_agreement: float | None = None  # None: the person sent no value of this type

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "role": self.role,
            "events": self.events,
            "predicted": self.predicted,
            **self.score.to_json(),
            "numericMse": self.numeric_mse,
            "valueAgreement": self.value_agreement,
        }


VALUE_AGREEMENT = 0.1
"""A value the policy would send agrees with the person's within this (the value's own units:
a tenth of a unit range, less than any two levels a keyboard page sends)."""


def value_agreement(
    predicted_values: np.ndarray,
    target_values: np.ndarray,
    available: np.ndarray,
    events: np.ndarray,
) -> float | None:
    """The share of the person's value-bearing events (`events` [N, S]) where every value the
    policy would send lies within `VALUE_AGREEMENT` of the person's ([N, S, V] values and
    `available`); None without such an event.

    Why: a squared error rewards a value between two a person sends (half a turn where the
    person taps a full one, coasting between the gas and the brake); on a rover it is a value
    no person sends. The share of agreeing values counts those as wrong."""
    bearing = events & available.any(axis=2)
    if not bearing.any():
        return None
    close = (np.abs(predicted_values - target_values) <= VALUE_AGREEMENT) | ~available
    return float(close.all(axis=2)[bearing].mean())


def command_changes(
    actual: np.ndarray,
    target_values: np.ndarray,
    available: np.ndarray,
    last_values: np.ndarray,
    recency: np.ndarray,
) -> np.ndarray:
    """bool [N, slots]: the command events that change what the rover does.

    An event of type s changes something when s was never sent before, when another type was
    sent more recently than s (a type change), or when one of its values differs from the last
    command of type s by more than CHANGE_TOLERANCE. Every other event is a re-send (a keepalive
    or a repeated key press). `last_values`/`recency` come from the state vector
    (`runtime.state.last_values_of` / `recency_of`); recency saturates at 10 s, so two types
    both silent for longer than that do not count as a type change.
    """
    slots = actual.shape[1]
    differs = np.abs(target_values[:, :slots] - last_values[:, :slots]) > CHANGE_TOLERANCE
    value_change = (differs & available[:, :slots]).any(axis=2)
    changes: np.ndarray = actual & (_type_change(recency[:, :slots]) | value_change)
    return changes


def motion_type_changes(actual: np.ndarray, recency: np.ndarray, motion: np.ndarray) -> np.ndarray:
    """bool [N, slots]: the events of a stop- or movement-role type (`motion[s]`) that switch
    between those types: a restart after a stop, a stop while driving, the first of them.
    `other`-role commands (a horn) change nothing the rover does and are ignored both as
    events and as the type sent last."""
    slots = actual.shape[1]
    motion = motion[:slots]
    among = np.where(motion[None, :], recency[:, :slots], np.inf)
    changes: np.ndarray = actual & motion[None, :] & _type_change(among)
    return changes


def _type_change(recency: np.ndarray) -> np.ndarray:
    never_sent = ~np.isfinite(recency)
    newest = recency.min(axis=1, keepdims=True)
    changed: np.ndarray = never_sent | (recency > newest)
    return changed


@dataclass(frozen=True)
class KindScore:
    """Recall and value error over one kind of command event (changes, or re-sends)."""

    events: int
    recall: float
    numeric_mse: float | None
    hold_last_mse: float | None

    @staticmethod
    def of(
        selected: np.ndarray,
        predicted: np.ndarray,
        errors: np.ndarray,
        held: np.ndarray,
        available: np.ndarray,
    ) -> KindScore:
        events = int(selected.sum())
        mask = available & selected[:, :, None]
        return KindScore(
            events=events,
            recall=float((predicted & selected).sum() / events) if events else 0.0,
            numeric_mse=float(errors[mask].mean()) if mask.any() else None,
            hold_last_mse=float(held[mask].mean()) if mask.any() else None,
        )

    def to_json(self) -> JsonObject:
        return {
            "events": self.events,
            "recall": self.recall,
            "numericMse": self.numeric_mse,
            "holdLastNumericMse": self.hold_last_mse,
        }


@dataclass(frozen=True)
class HoldLast:
    """The hold-last-command baseline on values, and the change/re-send split of the events."""

    numeric_mse: float | None  # None: no value-bearing event
    value_agreement: float | None  # the last command's values against the person's
    changes: KindScore
    resends: KindScore

    def to_json(self) -> JsonObject:
        return {
            "holdLastNumericMse": self.numeric_mse,
            "holdLastValueAgreement": self.value_agreement,
            "changes": self.changes.to_json(),
            "resends": self.resends.to_json(),
        }


@dataclass(frozen=True)
class EventMetrics:
    """How well predicted command events match the human's, over a set of windows."""

    windows: int
    positive_actions: int
    predicted_actions: int
    score: Score
    numeric_mse: float
    stop_events: int
    stop_recall: float
    movement_events: int
    movement_recall: float
    per_slot: tuple[SlotMetrics, ...]
    baselines: tuple[BaselineScore, ...]
    timely_precision: float  # `timely_precision`: what the gate's precision bar judges
    hold_last: HoldLast | None = None
    value_agreement: float | None = None  # `value_agreement` over the scored types
    levelled: bool = False  # some value column is sent as levels (`learn.levels`)
    regressed_numeric_mse: float | None = None  # over the other columns; None: none sent

    def gated_numeric_mse(self) -> float | None:
        """The value error the gate's absolute bar (`maxNumericMse`) judges: over the
        regressed values. A wrong level costs its whole gap squared (a turn of 1 for 0: 1.0),
        so an absolute bar in value units says nothing about levels; they are judged by the
        relative rules (against repeating the last command, against grey frames)."""
        return self.regressed_numeric_mse if self.levelled else self.numeric_mse

    def value_error_vs_hold_last(self) -> float | None:
        """Value MSE over the hold-last baseline's, on the commands that change what the rover
        does (1: no better than repeating the last command; re-sends are excluded because
        the baseline is exact on them by definition). None when there is nothing to compare."""
        changes = self.hold_last.changes if self.hold_last is not None else None
        if changes is None or changes.numeric_mse is None or not changes.hold_last_mse:
            return None
        return changes.numeric_mse / changes.hold_last_mse

    @property
    def precision(self) -> float:
        return self.score.precision

    @property
    def recall(self) -> float:
        return self.score.recall

    @property
    def f1(self) -> float:
        return self.score.f1

    def best_baseline_f1(self) -> float:
        return max((row.score.f1 for row in self.baselines), default=0.0)

    def to_json(self) -> JsonObject:
        return {
            "windows": self.windows,
            "positiveActions": self.positive_actions,
            "predictedActions": self.predicted_actions,
            **self.score.to_json(),
            "timelyPrecision": self.timely_precision,
            "numericMse": self.numeric_mse,
            "regressedNumericMse": self.gated_numeric_mse(),
            "valueAgreement": self.value_agreement,
            "stopEvents": self.stop_events,
            "stopRecall": self.stop_recall,
            "movementEvents": self.movement_events,
            "movementRecall": self.movement_recall,
            "perSlot": [slot.to_json() for slot in self.per_slot],
            "baselines": {"trainingFrequency": [row.to_json() for row in self.baselines]},
            **(self.hold_last.to_json() if self.hold_last is not None else {}),
            **({"valueErrorVsHoldLast": self.value_error_vs_hold_last()} if self.hold_last else {}),
        }


def frequency_baselines(actual: np.ndarray, frequencies: np.ndarray) -> tuple[BaselineScore, ...]:
    """Scores of predictors that know only how often each slot fired in training
    (`frequencies`: per slot, the probability that a training window fires it).

    `always`: fire every slot that ever fired in training, in every window.
    `frequency`: fire slot s at random with its training frequency (expected F1).
    """
    slots = actual.shape[1]
    freq = np.asarray(frequencies[:slots], dtype=np.float64)
    if ((freq < 0) | (freq > 1)).any():
        raise ValueError(f"training frequencies {freq.tolist()} are not probabilities per window")
    positives = int(actual.sum())
    seen = freq > 0
    always = Score.of(int(actual[:, seen].sum()), int(seen.sum()) * actual.shape[0], positives)
    expected_predicted = float((freq * actual.shape[0]).sum())
    expected_true = float((actual.sum(axis=0) * freq).sum())
    frequency = Score.of(expected_true, expected_predicted, positives)
    return (BaselineScore("always", always), BaselineScore("frequency", frequency))


SCORED_ROLES = ("stop", "movement")


def scored_slots(schema: Schema) -> np.ndarray:
    """bool [len(schema)]: the types the overall figures score: those that stop or move the
    rover. A signal (role `other`, a horn) is scored per type only.

    Why: a person sends a signal once per occasion, at a moment of their choosing within a
    second or so, and the command history the held-out windows show is the person's. Scored
    window by window, a policy that knows a signal is due fires it in every window until the
    person's own shows in the history. Warehouse data seed 0's horn: 49 predictions for 10
    held-out events (precision 0.08) took the overall precision from 0.508 to 0.484; driving
    itself, where the history shows its own horn, the same policy sounded it 40 times for
    21 workers met (docs/learning.md, "What the gate cannot see")."""
    return np.array([slot["role"] in SCORED_ROLES for slot in schema], dtype=bool)


def slot_metrics(
    schema: Schema,
    predicted: np.ndarray,
    predicted_values: np.ndarray,
    actual: np.ndarray,
    target_values: np.ndarray,
    available: np.ndarray,
) -> tuple[SlotMetrics, ...]:
    """Every type of the schema on its own, a signal included ([N, SLOTS] fires, [N, SLOTS,
    VALUES] values and availability, cut to the schema's slots)."""
    hit = predicted & actual
    rows = []
    for index, slot in enumerate(schema):
        fired, sent = predicted[:, index], actual[:, index]
        mask = available[:, index] & sent[:, None]
        errors = (predicted_values[:, index] - target_values[:, index]) ** 2
        one = slice(index, index + 1)
        rows.append(
            SlotMetrics(
                type=slot["type"],
                role=slot["role"],
                events=int(sent.sum()),
                predicted=int(fired.sum()),
                score=Score.of(int(hit[:, index].sum()), int(fired.sum()), int(sent.sum())),
                numeric_mse=float(errors[mask].mean()) if mask.any() else 0.0,
                value_agreement=value_agreement(
                    predicted_values[:, one],
                    target_values[:, one],
                    available[:, one],
                    actual[:, one],
                ),
            )
        )
    return tuple(rows)


def timely_precision(predicted: np.ndarray, actual: np.ndarray, actual_next: np.ndarray) -> float:
    """The share of the fires where the person sent that type in the window or in the next
    one ([N, S] bools): precision that counts a command sent one tick early as on time.

    Why: the held-out windows are scored with the person's history. A policy that sees a
    command coming fires a window early, then again in the person's window (the person's
    command is not in its history yet): exact windows count a false alarm and a hit. On a
    rover its own early command enters its history and it does not send again: one command,
    100 ms early. Those early fires were most of the gate's false alarms on two models that
    meet every closed-loop goal (imported tubs: 37 of 39 `stop` false alarms in a held-out
    tub's replay; warehouse continuous data seed 0) while exact precision (0.491, 0.473)
    refused them (docs/learning.md, "Precision: a fire one tick early is on time"). A fire
    one tick *late* is not forgiven: the person's command is in the history by then, and the
    rover would send it twice."""
    fired = int(predicted.sum())
    if not fired:
        return 0.0
    return float((predicted & (actual | actual_next)).sum()) / fired


def role_recall(
    schema: Schema, predicted: np.ndarray, actual: np.ndarray, role: str
) -> tuple[int, float]:
    """(the person's events of the types with `role`, the share the policy fired on)."""
    columns = np.array([slot["role"] == role for slot in schema], dtype=bool)
    events = int(actual[:, columns].sum())
    hits = int((predicted & actual)[:, columns].sum())
    return events, hits / events if events else 0.0


def event_metrics(
    predicted: np.ndarray,
    predicted_values: np.ndarray,
    actual: np.ndarray,
    target_values: np.ndarray,
    available: np.ndarray,
    schema: Schema,
    frequencies: np.ndarray,
    actual_next: np.ndarray,
    history: tuple[np.ndarray, np.ndarray] | None = None,
    levelled: np.ndarray | None = None,
) -> EventMetrics:
    """Per type, every type of the schema; overall (precision, recall, F1, value error, the
    baselines, the change/re-send split, `timely_precision`), the types of `scored_slots`.

    `actual_next`: [N, SLOTS] the person's commands in the window after each.

    `history`: (last values [N, SLOTS, VALUES], recency [N, SLOTS]) from the windows' state
    vectors, for the hold-last baseline and the change/re-send split; None to skip them.
    `levelled`: bool [SLOTS, VALUES], the value columns the policy sends as levels."""
    slots = len(schema)
    every_predicted, every_actual = predicted[:, :slots], actual[:, :slots]
    values, targets, available = (
        predicted_values[:, :slots],
        target_values[:, :slots],
        available[:, :slots],
    )
    per_slot = slot_metrics(schema, every_predicted, values, every_actual, targets, available)
    scored = scored_slots(schema)
    predicted = every_predicted & scored
    actual = every_actual & scored
    mask = available & actual[:, :, None]
    errors = (values - targets) ** 2
    stop_events, stop_recall = role_recall(schema, every_predicted, every_actual, "stop")
    movement_events, movement_recall = role_recall(
        schema, every_predicted, every_actual, "movement"
    )
    hold_last = None
    if history is not None:
        last_values, recency = history
        held = (last_values[:, :slots] - targets) ** 2
        changes = command_changes(actual, target_values, available, last_values, recency)
        hold_last = HoldLast(
            numeric_mse=float(held[mask].mean()) if mask.any() else None,
            value_agreement=value_agreement(last_values[:, :slots], targets, available, actual),
            changes=KindScore.of(changes, predicted, errors, held, available),
            resends=KindScore.of(actual & ~changes, predicted, errors, held, available),
        )
    return EventMetrics(
        windows=int(actual.shape[0]),
        positive_actions=int(actual.sum()),
        predicted_actions=int(predicted.sum()),
        score=Score.of(int((predicted & actual).sum()), int(predicted.sum()), int(actual.sum())),
        numeric_mse=float(errors[mask].mean()) if mask.any() else 0.0,
        value_agreement=value_agreement(values, targets, available, actual),
        stop_events=stop_events,
        stop_recall=stop_recall,
        movement_events=movement_events,
        movement_recall=movement_recall,
        per_slot=per_slot,
        baselines=frequency_baselines(actual, frequencies[:slots] * scored),
        hold_last=hold_last,
        timely_precision=timely_precision(predicted, actual, actual_next[:, :slots]),
        **levelled_fields(errors, mask, levelled),
    )


def levelled_fields(
    errors: np.ndarray, mask: np.ndarray, levelled: np.ndarray | None
) -> dict[str, Any]:
    """EventMetrics' `levelled` and `regressed_numeric_mse` ([N, S, V] squared errors and the
    mask of the values scored, cut to the schema's S slots)."""
    if levelled is None or not levelled.any():
        return {"levelled": False, "regressed_numeric_mse": None}
    regressed = mask & ~levelled[None, : mask.shape[1]]
    mse = float(errors[regressed].mean()) if regressed.any() else None
    return {"levelled": True, "regressed_numeric_mse": mse}


def natural_frequencies(usable_windows: int, command_windows: np.ndarray) -> np.ndarray:
    """The share of usable training windows in which each slot fires, before any sampling: a
    probability per window, what the `frequency` baseline fires with (`frequency_baselines`).

    `command_windows`: per slot, the windows a person's command lands in, never the commands
    themselves (a CarRacing teleop page sends more than one command per window: counted as
    commands, data seed 1's rate was 1.06, and the baseline scored a recall of 1.06)."""
    counts = np.asarray(command_windows, dtype=np.float64)
    if (counts < 0).any() or (counts > usable_windows).any():
        raise ValueError(f"window counts {counts.tolist()} outside 0..{usable_windows}")
    return counts / max(1, usable_windows)


INTERVAL_LEVEL = 0.9
INTERVAL_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A held-out figure's interval from a bootstrap over whole sessions."""

    low: float
    high: float
    level: float
    sessions: int

    def to_json(self) -> JsonObject:
        return {"low": self.low, "high": self.high, "level": self.level, "sessions": self.sessions}


def session_f1_interval(
    predicted: np.ndarray,
    actual: np.ndarray,
    session: np.ndarray,
    scored: np.ndarray,
    seed: int = 0,
) -> Interval | None:
    """The held-out F1's percentile interval (INTERVAL_LEVEL), resampling whole sessions with
    replacement: neighbouring windows of one drive are not independent, so the session, not
    the window, is the unit of the sample. `scored`: the slots the F1 counts (`scored_slots`).
    None with fewer than 2 sessions."""
    names, position = np.unique(session, return_inverse=True)
    if len(names) < 2:
        return None
    slots = len(scored)
    predicted, actual = predicted[:, :slots] & scored, actual[:, :slots] & scored
    per_session = np.zeros((len(names), 3))
    np.add.at(per_session[:, 0], position, (predicted & actual).sum(axis=1))
    np.add.at(per_session[:, 1], position, predicted.sum(axis=1))
    np.add.at(per_session[:, 2], position, actual.sum(axis=1))
    draws = np.random.default_rng(seed).multinomial(
        len(names), np.full(len(names), 1.0 / len(names)), size=INTERVAL_RESAMPLES
    )
    hits, guesses, events = (draws @ per_session).T
    total = guesses + events
    f1 = np.divide(2 * hits, total, out=np.zeros_like(hits), where=total > 0)
    tail = (1 - INTERVAL_LEVEL) / 2
    low, high = np.quantile(f1, [tail, 1 - tail])
    return Interval(float(low), float(high), INTERVAL_LEVEL, len(names))
