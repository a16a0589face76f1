"""Commands from sampled control values: what a human's controls become in a command log.

Donkeycar tubs and LeRobot datasets store the controls at every frame (20-30 times a second);
a rovertrain command log holds what the operator *sent*: `drive` when the controls change, a
keepalive while the rover moves, `stop` when it comes to rest. Pure functions, no I/O.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rovertrain.contracts.command_schema import HUMAN
from rovertrain.data.recording import Command, CommandLine

DRIVE = "drive"
STOP = "stop"
COMMAND_ROLES = {STOP: "stop", DRIVE: "movement"}

DEFAULT_TOLERANCE = 0.05
"""A value must move by more than this (on the [-1, 1] scale) to send a new `drive`."""
DEFAULT_KEEPALIVE_MS = 500.0
"""While moving, a `drive` at least this often (rovertrain's own rovers send one every 500 ms)."""
ZERO = 0.01
"""|value| at or below this is at rest (a joystick's dead zone)."""


@dataclass(frozen=True)
class ControlSample:
    """The human's control values at one instant (ms on the recording's command clock)."""

    t: float
    values: Mapping[str, float]
    by: str = HUMAN
    """Who sent them (a ROS bag's policy topic under a mux: `policy`); a change of sender
    sends a command at once."""


@dataclass(frozen=True)
class CommandRules:
    tolerance: float = DEFAULT_TOLERANCE
    keepalive_ms: float = DEFAULT_KEEPALIVE_MS
    motion: tuple[str, ...] = ()
    """The values that make the rover move: all at rest means stopped (empty: every value)."""
    zero: float = ZERO
    drive: str = DRIVE
    """The command type that carries the values (LeRobot action maps may name another)."""
    stop_keepalive: bool = True
    """Samples at rest after a `stop` re-send it every `keepalive_ms`: controls held at zero
    (a tub's 20 Hz records, a stream of zero Twists) are someone holding the rover stopped,
    as a teleop page's held stop key repeats. Without it a policy that keeps its stop while
    waiting scores as false alarms (tests/importers/test_synth_tubs_learn.py)."""
    silence_ms: float | None = None
    """A stream that falls silent this long while moving has stopped the rover (a ROS base
    controller's command timeout): a `stop` at the last sample plus this. None: sampled
    sources (tubs, data sets) whose silence is the end of the recording."""


def clip(value: float) -> float:
    return min(1.0, max(-1.0, value))


def _at_rest(values: Mapping[str, float], rules: CommandRules) -> bool:
    names = rules.motion or tuple(values)
    return all(abs(values.get(name, 0.0)) <= rules.zero for name in names)


def _changed(sent: Mapping[str, float], values: Mapping[str, float], tolerance: float) -> bool:
    names = set(sent) | set(values)
    return any(abs(values.get(name, 0.0) - sent.get(name, 0.0)) > tolerance for name in names)


def extract_commands(
    samples: Iterable[ControlSample], rules: CommandRules, end: float | None = None
) -> list[Command]:
    """The commands a human sent, given their controls sampled over time (sorted by t).

    - the rover starts at rest; the first sample that moves it sends `drive`;
    - while moving, `drive` (`rules.drive`) is sent when any value differs from the last one
      sent by more than `tolerance`, when the sender changes (a person taking over from a
      policy), and at least every `keepalive_ms` (at the first sample at or after it);
    - when the motion values return to rest, one `stop` is sent (with `stop_keepalive`, again
      every `keepalive_ms` while samples at rest keep coming, and at once when another sender
      sends them); controls that change while at rest (steering a parked car) send nothing;
    - with `silence_ms`, a gap that long after a moving sample is a `stop` at its end, and so
      is one before `end` (the recording's end on the same clock).
    Values are clipped to [-1, 1]; each command is marked with its sample's sender.
    """
    commands: list[Command] = []
    moving = False
    sent: Mapping[str, float] = {}
    sender = HUMAN
    stopped = False  # a `stop` was the last command sent
    last_sent = last_seen = -math.inf

    def fell_silent(now: float) -> float | None:
        """When a moving stream that fell silent before `now` stopped the rover, if it did."""
        silence = rules.silence_ms
        if moving and silence is not None and now - last_seen > silence:
            return last_seen + silence
        return None

    for sample in samples:
        if (silent := fell_silent(sample.t)) is not None:
            commands.append(Command(silent, STOP, by=sender))
            moving, stopped, sent, last_sent = False, True, {}, silent
        last_seen = sample.t
        values = {name: clip(value) for name, value in sample.values.items()}
        if _at_rest(values, rules):
            held = stopped and rules.stop_keepalive and sample.t - last_sent >= rules.keepalive_ms
            if moving or held or (stopped and sample.by != sender):
                commands.append(Command(sample.t, STOP, by=sample.by))
                moving, stopped, sent, last_sent = False, True, {}, sample.t
            sender = sample.by
            continue
        if (
            not moving
            or sample.by != sender
            or _changed(sent, values, rules.tolerance)
            or sample.t - last_sent >= rules.keepalive_ms
        ):
            commands.append(Command(sample.t, rules.drive, values, sample.by))
            moving, stopped, sent, last_sent = True, False, values, sample.t
        sender = sample.by
    if end is not None and (silent := fell_silent(end)) is not None:
        commands.append(Command(silent, STOP, by=sender))
    return commands


def record_cadence_ms(times: Sequence[float]) -> float | None:
    """The median interval between consecutive samples (the source's loop period), or None."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    positive = [gap for gap in gaps if gap > 0]
    return statistics.median(positive) if positive else None


def keepalive_for(times: Sequence[float], wanted_ms: float = DEFAULT_KEEPALIVE_MS) -> float:
    """The keepalive the source can show: `wanted_ms` rounded up to a whole number of its
    sample periods (a 20 Hz tub sends its keepalive every 10th record, at 500 ms)."""
    cadence = record_cadence_ms(times)
    if cadence is None or cadence >= wanted_ms:
        return wanted_ms if cadence is None else cadence
    periods = math.ceil(wanted_ms / cadence - 1e-9)
    return periods * cadence - cadence / 2  # half a period of slack for timestamp jitter


@dataclass
class Dropped:
    """Counts of what an import left out, by reason (records, frames or lines)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, count: int = 1) -> None:
        if count:
            self.counts[reason] = self.counts.get(reason, 0) + count

    def merge(self, other: Dropped) -> None:
        for reason, count in other.counts.items():
            self.add(reason, count)

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def command_line(command: Command) -> CommandLine:
    """One command-log line (format v1)."""
    line: CommandLine = {"t": round(command.t, 3), "type": command.type}
    if command.values:
        line["values"] = {name: round(value, 6) for name, value in command.values.items()}
    if command.by != HUMAN:
        line["by"] = command.by
    return line
