"""`RoverPolicy`: an exported policy, run tick by tick as on the rover.

An exported folder holds `model.onnx`, `runtime.json` (the specification) and `manifest.json`
(every file's size and sha256). `load` verifies the files before anything is run; `tick` builds
the model input with `prepare_frame` and the state with `StateTracker`, the same code training
uses, and runs onnxruntime at batch 1. The image input stacks this tick's frame and the previous
tick's (`frameHistory` 2): call `tick` every tick, also while a person drives, so the policy
has the previous frame when it takes over.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from rovertrain.contracts.command_schema import (
    CHANGE_TOLERANCE,
    HUMAN,
    MOTION_ROLES,
    SENDERS,
    SLOTS,
)
from rovertrain.contracts.observation import (
    FRAME_HISTORY,
    OBS_HEIGHT,
    OBS_WIDTH,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.contracts.runtime_spec import (
    FORMAT,
    IMAGE_INPUT,
    MANIFEST_FILE,
    MODEL_FILE,
    RUNTIME_FILE,
    STATE_INPUT,
    RuntimeSpec,
    RuntimeSpecError,
)
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.runtime.frames import prepare_frame
from rovertrain.runtime.state import StateTracker

__all__ = [
    "FORMAT",
    "IMAGE_INPUT",
    "MANIFEST_FILE",
    "MODEL_FILE",
    "RUNTIME_FILE",
    "STATE_INPUT",
    "Decision",
    "InferenceSession",
    "PolicyFileError",
    "RoverPolicy",
    "SentMotion",
    "early_resend",
    "keeps_pressed",
    "level_to_send",
    "person_chance",
    "rest_level",
    "sent_types",
    "start_type",
    "steering_type",
    "unsent_after",
]


class PolicyFileError(Exception):
    """An exported folder that is missing, incomplete or altered: never run."""


class InferenceSession(Protocol):
    """What `RoverPolicy` needs of a model: onnxruntime's `InferenceSession.run` (replay
    and tests pass other implementations with the same call)."""

    def run(
        self, output_names: list[str] | None, input_feed: dict[str, np.ndarray], /
    ) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class Decision:
    """What the policy would send in the window [t_ms, t_ms + tick).

    `fire`: the event head, a person's imitation: where the export says how training balanced
    rare types (`output.eventWeights`), when the chance that the person would have sent the
    type since it was last sent reaches the threshold (`RoverPolicy.fires`); else its
    probability reaching it (`replay` reports it per tick and scores the probability, as the
    gate does). `steer`: the movement type the rover executes, not fired, whose predicted
    values moved more than the steering deadband from the executed ones. `start`: on a rover
    nothing was sent to, the movement type that starts it. A rover sends `send`
    (fired, steering or starting)."""

    t_ms: float
    fire: dict[str, bool]
    probability: dict[str, float]
    values: dict[str, dict[str, float]]
    image: np.ndarray  # uint8 1×C×H×W, the model's image input
    state: np.ndarray  # float32 1×S, the model's state input
    steer: dict[str, bool] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    standing: bool = False  # the rover executes no movement (stopped, or nothing sent yet)
    early: str | None = None  # a type whose sending now would be an early re-send
    start: str | None = None  # nothing sent yet: the movement type that starts the rover
    # Per type, the tapped values whose key release fired and was kept back (`keeps_pressed`):
    # `values` holds their pressed level.
    kept: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def send(self) -> dict[str, bool]:
        """What a rover driven by this policy sends now: fired or steering, of the stop- and
        movement-role types one at most (`sent_types`), and no early re-send
        (`early_resend`); on a rover nothing was sent to, `start` when none of them is sent."""
        chosen = sent_types(self.fire, self.steer, self.roles, self.standing)
        if self.early is not None and chosen.get(self.early):
            chosen[self.early] = False
        motion = [
            kind for kind, on in chosen.items() if on and self.roles.get(kind) in MOTION_ROLES
        ]
        if self.start is not None and not motion:
            chosen[self.start] = True
        return chosen


@dataclass(frozen=True)
class SentMotion:
    """A stop- or movement-role command as it was sent."""

    t_ms: float
    type: str
    values: dict[str, float]


def early_resend(
    predicted: Mapping[str, Mapping[str, float]],
    last: SentMotion | None,
    t_ms: float,
    resend_after: Mapping[str, float],
) -> str | None:
    """The type whose sending now would re-send the last stop- or movement-role command
    (`last`: the same type, every predicted value within `CHANGE_TOLERANCE` of the one sent)
    sooner than the recordings' person re-sent it (`resend_after`, ms; a type without one is
    re-sent whenever it fires); else None. A change goes out at once.

    Why: the event head fires a re-send where one is likely, and after its own re-send 100 ms
    ago one is as likely as after the person's 150-250 ms: a keyboard policy re-sent its stop
    at every tick while it waited (2.3 times the person's stops) (docs/learning.md,
    "Which command a rover sends")."""
    if last is None or t_ms - last.t_ms >= resend_after.get(last.type, 0.0):
        return None
    values = predicted.get(last.type, {})
    same = all(
        abs(float(values.get(name, sent)) - sent) <= CHANGE_TOLERANCE
        for name, sent in last.values.items()
    )
    return last.type if same else None


def person_chance(probability: float, weight: float) -> float:
    """The chance that the person sends in this window, from the event head's `probability`
    when training counted a window where the type fires `weight` times to balance a rare type
    (`output.eventWeights`, `learn.event_weights`).

    Why: a loss that counts a firing window w times is lowest where the model answers w times
    the person's odds, so its 0.5 stands for a 1-in-(1 + w) chance: a corridor stop (w 11.8)
    fired about a second before the person's, and where the rover then stood further from the
    pallet than a pallet clears, it stood until a person took over (docs/learning.md, "When
    a command fires")."""
    if probability >= 1.0:
        return 1.0
    return probability / (probability + weight * (1.0 - probability))


def unsent_after(
    unsent: Mapping[str, float], sent: str, previous: str | None, roles: Mapping[str, str]
) -> dict[str, float]:
    """Per type, the chance that the person would not have sent it (`RoverPolicy.fires`)
    after `sent` goes out: `sent`'s own starts again; a stop- or movement-role command of
    another type than the last such one (`previous`; None: none yet) starts every stop- and
    movement-role type again, `other` types keep theirs.

    Why: after a switch between stopping and moving the person is asked something new (go
    again, stop again), and the chances added up before it answered the old question: a
    corridor policy, its `drive` chances carried across its own stop, restarted at the next
    tick with the pallet still ahead, stopped, restarted, until the supervisor stopped it
    within 2.5 m of the pallet (docs/learning.md, "When a command fires")."""
    switch = roles.get(sent) in MOTION_ROLES and sent != previous
    return {
        kind: chance
        for kind, chance in unsent.items()
        if kind != sent and not (switch and roles.get(kind) in MOTION_ROLES)
    }


def start_type(
    probability: Mapping[str, float], roles: Mapping[str, str], above: float
) -> str | None:
    """On a rover nothing was sent to yet, the command that starts it: the likeliest
    movement-role type (the first in the schema on a tie), when its probability is above
    `above` (`startThreshold`); else None (the rover stays parked, and the rule stays on
    until a command is sent).

    Why: the event head says how likely a person sends in this 100 ms window, and in the
    recordings a person's first command comes whenever they are ready, not at a moment the
    picture shows. Engaging the policy on a parked rover is that moment: the question is
    which command the person sends first, not when. A warehouse policy that drove 98.9% in
    lane handed over sat parked from rest on four of five world seeds, its drive probability
    at 0.37-0.41 for 20 s under the 0.5 threshold, its stop probability 0.00: 0.19 of the
    person's distance (docs/learning.md, "Which command a rover sends"). The stop's
    probability does not hold the start back: a stop changes nothing on a rover that stands
    (as in `sent_types`), and where a person would stop the stop's own event fires and goes
    out instead of the start (`Decision.send`). Waiting while the stop was likelier than the
    movement kept a road keyboard policy parked nose to the kerb for good (stop 0.37, drive
    0.02, its values a full turn away): its stop's chances added up, the stop fired, and
    re-sent, it held the rover as a person holds the stop key before a cone."""
    likeliest: tuple[float, str] | None = None
    for kind, p in probability.items():
        if roles.get(kind) == "movement" and (likeliest is None or p > likeliest[0]):
            likeliest = (p, kind)
    if likeliest is None or likeliest[0] <= above:
        return None
    return likeliest[1]


def sent_types(
    fire: Mapping[str, bool],
    steer: Mapping[str, bool],
    roles: Mapping[str, str],
    standing: bool,
) -> dict[str, bool]:
    """Every type that fires or steers, except that a rover executes one stop- or
    movement-role command at a time: while it moves a firing stop wins (the safe choice);
    while it stands (`standing`: after a stop, or before anything was sent) a firing movement
    type wins over a firing stop; among several movement types the first in the schema.

    Why: re-sending a stop to a rover that stands changes nothing, and a person who waits
    there and sends anything else sends the command that gets it going. With the stop always
    winning, a policy whose stop probability stayed above the threshold after the way cleared
    (0.64, while its drive probability rose to 0.98: keyboard recordings hold the stop key and
    repeat it for seconds) never drove again (docs/learning.md, "Which command a rover
    sends")."""
    chosen = {kind: fired or steer.get(kind, False) for kind, fired in fire.items()}
    stops = [kind for kind, on in chosen.items() if on and roles.get(kind) == "stop"]
    moves = [kind for kind, on in chosen.items() if on and roles.get(kind) == "movement"]
    keep = moves[:1] if moves and (standing or not stops) else stops[:1]
    for kind in (*stops, *moves):
        chosen[kind] = kind in keep
    return chosen


def steering_type(
    fire: Mapping[str, bool],
    values: Mapping[str, Mapping[str, float]],
    roles: Mapping[str, str],
    executing: tuple[str, Mapping[str, float]] | None,
    deadband: float,
) -> str | None:
    """The movement type to re-send without its event firing: the one the rover executes
    (`executing`: the last stop- or movement-role command sent; None or a stop: nothing),
    when no stop- or movement-role type fires (itself included), and a predicted value is
    more than `deadband` away from the executed one. 0 turns this off.

    Why: the event head imitates *when a person sends*, and a person re-sends a steady
    command only every keepalive; between those the rover holds the last turn. A policy
    driving itself has to correct as soon as its intent changes, or it reacts late in every
    corner and weaves (docs/learning.md, "Steering between the events")."""
    if deadband <= 0 or executing is None:
        return None
    kind, executed = executing
    if roles.get(kind) != "movement" or fire.get(kind, False):
        return None
    # A firing stop wins, and a movement type that fires replaces the executed one.
    if any(fired and roles.get(other) in MOTION_ROLES for other, fired in fire.items()):
        return None
    predicted = values.get(kind, {})
    moved = any(
        abs(value - float(executed.get(name, 0.0))) > deadband for name, value in predicted.items()
    )
    return kind if moved else None


def regressed_values(
    values: Mapping[str, Mapping[str, float]], levelled: Mapping[str, frozenset[str]]
) -> dict[str, dict[str, float]]:
    """The values the steering rule compares: the regressed ones. A value sent at levels
    changes only when the event head fires: a key press is an event. Steered, a keyboard road
    policy changed its turn between two levels at every tick (9.3 commands per second against
    the person's 5.1) and kept 92.5% in lane; without, 98.8% (docs/learning.md, "Values a
    person sends at a few levels")."""
    return {
        kind: {name: v for name, v in named.items() if name not in levelled.get(kind, ())}
        for kind, named in values.items()
    }


def level_to_send(expected: float, owed: float, levels: Sequence[float]) -> float:
    """The level to send for a model's expected level (policy version 6) when the sends
    before it left `owed` (the expected levels they stood for, less the levels sent): the
    level nearest to both together. After the send, `expected + owed - level` is owed.

    Why: a person's level is a decision among a few keys, and where a state gets each key
    part of the time (a tap on the arrow every other keepalive in a long bend, the gas
    pressed and released to hold a speed) the person's commands average a value between
    the levels. Sending the most likely level turns fully or not at all; sending the expected
    value sends a level no person sends. Spreading the expected level over the sends (error
    diffusion) sends only the person's levels and averages what the person averages: on the
    same keyboard checkpoints, CarRacing 0.96 of the driver's reward against 0.23, a road
    policy's 1.35x the person's commands against 1.60x (docs/learning.md, "Values a person
    sends at a few levels"). Where the model is sure, the expected level is a level and the
    level is sent every time; a value the person holds comes as its most likely level (the
    model's choice, `output.values.spread`), which this sends as it is."""
    wanted = expected + owed
    return min(levels, key=lambda level: (abs(level - wanted), abs(level - expected)))


def rest_level(levels: Sequence[float]) -> float:
    """The level a released key sends: the one nearest 0 (no turn, coasting). A keyboard
    page sends its value's rest level when no key of it is held."""
    return min(levels, key=lambda level: (abs(level), level))


def keeps_pressed(pressed: float, wanted: float, rest: float, above: float) -> bool:
    """Whether a release of a tapped key (`pressed` -> `rest`) is kept back: the policy, asked
    with the key released, expects a level at the next tick which, with what earlier sends
    owe (`wanted`, as `level_to_send` adds them), lies more than `above` of the way from the
    rest level back to the pressed one (`keepPressedAbove`; 1: never).

    Why ask with the key released: a person's shortest tap is about 150 ms and a held key
    repeats every 250 ms, so in the recordings a send 100-200 ms after a press is the tap's
    release, and the policy learns exactly that: 100 ms after its own press it expects a
    send and the rest level, in a corner as on a straight. Its question "which key, if any,
    would I press?" is answered where the key is up: a warehouse keyboard policy released
    211 of its 220 presses at the next tick, held a full turn on 22% of the ticks against
    the person's 37%, and left the aisle at its first tight corner (65-72% in lane); with the
    release kept back it met every goal.

    Why with what is owed: asked with the key up, a policy expects the next command's level,
    and where a person holds a speed by tapping (CarRacing's gas pressed 74% of the time,
    every release 160 ms) the next command is always the press again. Compared alone, it
    kept 77 of 109 releases of the gas and drove off the track too fast (0.74 of the
    driver's reward, 0.92 without), or kept a brake pressed at a standstill forever. Carried
    as any expected level is (error diffusion), the key is held for the share of the time
    the answers add up to: a release kept on 3 ticks of that track, every warehouse goal met
    (docs/learning.md, "Values a person sends at a few levels")."""
    if above >= 1.0 or pressed == rest:
        return False
    return (wanted - rest) / (pressed - rest) > above


def read_verified(directory: Path) -> dict[str, bytes]:
    """The folder's files as bytes, each checked against the manifest (size and sha256)."""
    try:
        manifest = parse_json((directory / MANIFEST_FILE).read_bytes().decode("utf-8"))
        files = manifest.get("files") if isinstance(manifest, dict) else None
        if not isinstance(files, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} manifest")
    except (OSError, ValueError, BadJson) as error:
        raise PolicyFileError(f"{directory / MANIFEST_FILE}: unreadable: {error}") from None
    contents: dict[str, bytes] = {}
    for name in (MODEL_FILE, RUNTIME_FILE):
        record = files.get(name)
        if not isinstance(record, dict):
            raise PolicyFileError(f"the manifest does not list {name}")
        path = directory / name
        if path.is_symlink() or not path.is_file():
            raise PolicyFileError(f"{path} is missing or not a regular file")
        data = path.read_bytes()
        if len(data) != record.get("bytes"):
            raise PolicyFileError(f"{name} has {len(data)} bytes, expected {record.get('bytes')}")
        if hashlib.sha256(data).hexdigest() != record.get("sha256"):
            raise PolicyFileError(f"{name} sha256 mismatch: the file was altered")
        contents[name] = data
    return contents


class RoverPolicy:
    """Feed `observe_command` every command sent; call `tick` once per 100 ms."""

    def __init__(self, session: InferenceSession, spec: RuntimeSpec | Mapping[str, object]):
        if not isinstance(spec, RuntimeSpec):  # a decoded runtime.json
            try:
                spec = RuntimeSpec.from_json(dict(spec))
            except RuntimeSpecError as error:
                raise PolicyFileError(f"{RUNTIME_FILE}: {error}") from None
        self.session = session
        self.spec = spec
        self.schema = spec.schema
        self.types = [slot["type"] for slot in self.schema]
        self.value_names = [list(slot["values"]) for slot in self.schema]
        self.threshold = float(spec.decision.actionThreshold)
        self.steering_deadband = float(spec.decision.steeringDeadband)
        self.start_threshold = float(spec.decision.startThreshold)
        self.keep_pressed_above = float(spec.decision.keepPressedAbove)
        given = spec.policy.input
        self.tick_ms = given.tick_ms
        self.state_size = given.state.size
        expected = (SLOTS * STATE_FEATURES_PER_SLOT, OBS_WIDTH, OBS_HEIGHT)
        found = (given.state.size, given.image.width, given.image.height)
        if found != expected:
            raise PolicyFileError(
                f"the model expects state size, width, height {found}; this runtime builds "
                f"{expected}: export it with a matching rovertrain"
            )
        self.frame_history = given.image.frame_history
        if self.frame_history not in (1, FRAME_HISTORY):
            raise PolicyFileError(
                f"the model stacks {self.frame_history} frames; this runtime runs 1 or "
                f"{FRAME_HISTORY}: export it with a matching rovertrain"
            )
        self.roles = spec.roles
        self.levelled = spec.policy.levelled
        # Version 6: levelled columns output the expected level, sent as levels
        # (`level_to_send`); what the sends so far owe, per (type, value).
        self.level_values = spec.policy.level_values if spec.policy.expected_levels else {}
        self.owed: dict[tuple[str, str], float] = {}
        # The tapped (spread) values whose key release `keeps_pressed` may keep back.
        self.tapped = spec.policy.spread if self.level_values else {}
        # The previous tick's model picture (HWC) and its tick time, for the frame history.
        self.previous: tuple[float, np.ndarray] | None = None
        # Supervised driving (`engage`): whether the policy drives now, and how often a
        # person took the rover back since `load` or `reset`.
        self.engaged = False
        self.take_overs = 0
        # The last stop- or movement-role command before the latest tick (None: nothing
        # sent), and those sent since.
        self.last_motion: SentMotion | None = None
        self.pending_motion: list[SentMotion] = []
        self.resend_after = spec.policy.resend_after
        # How training balanced each type's events (none: an export made before), and per
        # type the chance that the person would not have sent it since it was last sent
        # (`unsent_after` says when that starts again).
        self.event_weights = spec.policy.event_weights
        self.unsent: dict[str, float] = {}
        self.tracker = StateTracker(self.schema, given.state.superseded_without_bins)
        self.rotation = 0

    @classmethod
    def load(cls, path: str | Path, threads: int = 1) -> RoverPolicy:
        """Load an exported folder; raises PolicyFileError when a file does not verify."""
        import onnxruntime

        contents = read_verified(Path(path))
        try:
            spec = RuntimeSpec.from_json(parse_json(contents[RUNTIME_FILE].decode("utf-8")))
        except RuntimeSpecError as error:
            raise PolicyFileError(f"{RUNTIME_FILE}: {error}") from None
        except (BadJson, UnicodeDecodeError) as error:
            raise PolicyFileError(f"{RUNTIME_FILE} is not JSON: {error}") from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(
            contents[MODEL_FILE], options, providers=["CPUExecutionProvider"]
        )
        return cls(session, spec)

    @property
    def unknown_commands(self) -> int:
        """Commands whose type the model has no slot for (ignored, as in training)."""
        return self.tracker.unknown_commands

    def reset(self) -> None:
        """Forget every command and tick (a new drive)."""
        self.tracker.reset()
        self.last_motion = None
        self.pending_motion = []
        self.previous = None
        self.engaged = False
        self.take_overs = 0
        self.owed = {}
        self.unsent = {}

    def engage(self) -> None:
        """Supervised driving: the operator hands the rover to the policy. It stays engaged
        until a person's stop- or movement-role command (`observe_command(..., by="human")`)
        takes over; the loop sends the policy's decisions only while `engaged` and records
        them `by: policy` (docs/recording-format.md)."""
        self.engaged = True

    def observe_command(
        self,
        t_ms: float,
        command_type: str,
        values: Mapping[str, float] | None = None,
        by: str = HUMAN,
    ) -> bool:
        """Record a command that was sent, by a person (`by` "human", the default) or by this
        policy ("policy"); False when its type is unknown. A person's stop- or movement-role
        command while the policy is engaged is a take-over: it disengages the policy."""
        if not isinstance(command_type, str):
            raise TypeError(f"command type must be a string, got {type(command_type).__name__}")
        if by not in SENDERS:
            raise ValueError(f"by must be one of {', '.join(SENDERS)}, got {by!r}")
        values = values or {}
        for name, value in values.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"command value {name}={value!r} is not a finite number")
        known = self.tracker.observe(t_ms, command_type, values)
        before = self.pending_motion[-1] if self.pending_motion else self.last_motion
        previous = before.type if before is not None else None
        self.unsent = unsent_after(self.unsent, command_type, previous, self.roles)
        role = self.roles.get(command_type)
        if by == HUMAN and self.engaged and role in MOTION_ROLES:
            self.engaged = False
            self.take_overs += 1
        if known and role in MOTION_ROLES:
            sent = {name: float(v) for name, v in values.items()}
            self.pending_motion.append(SentMotion(float(t_ms), command_type, sent))
        return known

    @property
    def executing(self) -> tuple[str, dict[str, float]] | None:
        """What the rover executes as of the latest tick: the last movement command, None
        after a stop or before anything was sent."""
        last = self.last_motion
        if last is None or self.roles.get(last.type) != "movement":
            return None
        return last.type, last.values

    def previous_is_one_tick_before(self, t_ms: float) -> bool:
        """The last picture was given one tick before `t_ms`: between half a tick and a tick
        and a half earlier (a rover's clock is never exactly 100 ms apart)."""
        if self.previous is None:
            return False
        gap = t_ms - self.previous[0]
        return 0.5 * self.tick_ms < gap <= 1.5 * self.tick_ms

    def inputs(self, frame: np.ndarray, t_ms: float) -> tuple[np.ndarray, np.ndarray]:
        """(uint8 1×C×H×W image, float32 1×S state) for this tick; advances the tracker.

        With a frame history of 2 the channels are this tick's picture, then the previous
        tick's: the one `tick` saw one tick earlier (`previous_is_one_tick_before`), else this
        one again (the first tick, or after a missed tick: as at the start of a recording, no
        motion is shown)."""
        state = self.tracker.state_at(t_ms)[None]
        picture = prepare_frame(frame, self.rotation)
        stacked = picture
        if self.frame_history > 1:
            earlier = picture
            if self.previous is not None and self.previous_is_one_tick_before(t_ms):
                earlier = self.previous[1]
            self.previous = (float(t_ms), picture)
            stacked = np.concatenate([picture, earlier], axis=2)
        return np.ascontiguousarray(stacked.transpose(2, 0, 1)[None]), state

    def tick(self, frame: np.ndarray, t_ms: float) -> Decision:
        """The decision for the window [t_ms, t_ms + tick) from this frame and the commands
        observed before t_ms."""
        image, state = self.inputs(frame, t_ms)
        logits, values = self.session.run(None, {IMAGE_INPUT: image, STATE_INPUT: state})
        probability = 1.0 / (1.0 + np.exp(-logits[0].astype(np.float64)))
        fire, chance, named = {}, {}, {}
        for slot, command_type in enumerate(self.types):
            p = float(probability[slot])
            chance[command_type] = p
            fire[command_type] = self.fires(command_type, p)
            row = values[0, slot]
            named[command_type] = {
                name: float(row[column]) for column, name in enumerate(self.value_names[slot])
            }
        expected = self.send_levels(named)
        for sent in [sent for sent in self.pending_motion if sent.t_ms < t_ms]:
            self.last_motion = sent
        self.pending_motion = [sent for sent in self.pending_motion if sent.t_ms >= t_ms]
        kept = self.keep_pressed(named, expected, fire, image, float(t_ms))
        steer = dict.fromkeys(self.types, False)
        steerable = regressed_values(named, self.levelled)
        deadband = self.steering_deadband
        steering = steering_type(fire, steerable, self.roles, self.executing, deadband)
        if steering is not None:
            steer[steering] = True
        standing = self.executing is None
        early = early_resend(named, self.last_motion, float(t_ms), self.resend_after)
        start = None
        if self.last_motion is None and not self.pending_motion:
            start = start_type(chance, self.roles, self.start_threshold)
        decision = Decision(
            float(t_ms),
            fire,
            chance,
            named,
            image,
            state,
            steer,
            self.roles,
            standing,
            early,
            start,
            kept,
        )
        sending = decision.send
        for (kind, name), wanted in expected.items():
            # What a fired or steered send did not deliver is owed to the next. A start owes
            # nothing: until a command is observed it is in `send` at every tick, sent or not
            # (a rover loop ticks in the shadow while a person drives).
            if sending.get(kind) and (fire[kind] or steer[kind]):
                self.owed[(kind, name)] = wanted - named[kind][name]
        return decision

    def fires(self, kind: str, probability: float) -> bool:
        """Whether `kind`'s event fires this tick: the chance that the person would have sent
        it in one of the windows since it was last sent, this one included, reaches the
        threshold, each window's chance read from the event head with the rare-type balance
        undone (`person_chance`), the windows independent given what the rover saw and sent.
        So a command goes out when half of the people the recordings show would have sent
        it, not when the first few would. The weight training adds to a switch between
        stopping and moving (`typeChangeEventWeight`) stays in the reading on purpose: a
        switch goes out sooner, when about one person in six would have made it (with it
        undone too, a warehouse policy drove past 3-4 of 16 pallets it was unsure of).
        An export without `output.eventWeights` fires at probability >= the threshold, as it
        was trained. Records this window's chance: called once per type and tick (`tick`)."""
        if not self.event_weights:
            return probability >= self.threshold
        weight = self.event_weights.get(kind, 1.0)
        unsent = self.unsent.get(kind, 1.0) * (1.0 - person_chance(probability, weight))
        self.unsent[kind] = unsent
        return 1.0 - unsent >= self.threshold

    def keep_pressed(
        self,
        named: dict[str, dict[str, float]],
        wanted: dict[tuple[str, str], float],
        fire: Mapping[str, bool],
        image: np.ndarray,
        t_ms: float,
    ) -> dict[str, tuple[str, ...]]:
        """Where the executed movement type fires with a tapped value released to its rest
        level, ask the model once more, as if the release had been sent now, what it would
        send at the next tick. That answer, plus what earlier sends owe, becomes what the
        value stands for (`wanted`, so the owed level carries on from it whichever level is
        sent); each release `keeps_pressed` keeps back gets the pressed level again in
        `named`. Returns them as `Decision.kept` holds them ({type: value names})."""
        executing = self.executing
        if executing is None or self.keep_pressed_above >= 1.0 or not fire.get(executing[0]):
            return {}
        kind, executed = executing
        columns, values = self.level_values.get(kind, {}), named.get(kind, {})
        released = [
            name
            for name in sorted(self.tapped.get(kind, frozenset()))
            if name in values
            and name in executed
            and values[name] == rest_level(columns[name])
            and executed[name] != values[name]
        ]
        if not released:
            return {}
        state = self.tracker.state_after(t_ms, kind, values, t_ms + self.tick_ms)
        _, later = self.session.run(None, {IMAGE_INPUT: image, STATE_INPUT: state[None]})
        slot = self.types.index(kind)
        kept = []
        for name in released:
            again = float(later[0, slot, self.value_names[slot].index(name)])
            wanted[(kind, name)] = again + self.owed.get((kind, name), 0.0)
            if keeps_pressed(
                executed[name], wanted[(kind, name)], values[name], self.keep_pressed_above
            ):
                values[name] = executed[name]
                kept.append(name)
        return {kind: tuple(kept)} if kept else {}

    def send_levels(self, named: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
        """Replace each expected level in `named` with the level to send (`level_to_send`);
        what each stood for, owed included, by (type, value)."""
        wanted: dict[tuple[str, str], float] = {}
        for kind, columns in self.level_values.items():
            values = named.get(kind, {})
            for name in columns.keys() & values.keys():
                expected, owed = values[name], self.owed.get((kind, name), 0.0)
                wanted[(kind, name)] = expected + owed
                values[name] = level_to_send(expected, owed, columns[name])
        return wanted
