"""The job file: strict loading and validation into typed, immutable settings.

Everything a job may contain is declared once in the tables below; `parse_job` checks a
decoded document against them and names the JSON pointer of the first bad field.
Nothing here touches the disk except reading the job text itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rovertrain.contracts.errors import InvalidJob
from rovertrain.contracts.identifiers import IDENTIFIER, valid_identifier
from rovertrain.contracts.strict_json import BadJson, parse_json

MAX_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Number:
    """A numeric field: bounds, integer-ness and its documented default."""

    default: float | int | str | bool
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    exclusive_minimum: bool = False
    doc: str = ""


# name -> (spec). Defaults are the documented ones (README, schemas/job.schema.json).
CONFIG_FIELDS: dict[str, Number] = {
    "threads": Number(2, 1, 64, integer=True, doc="CPU threads for torch and decoding"),
    "maxJobSeconds": Number(600, 0, MAX_SECONDS, exclusive_minimum=True, doc="time budget"),
    "maxSamples": Number(12000, 1, 2_000_000, integer=True, doc="windows kept over sessions"),
    "minimumSamples": Number(256, 1, 2_000_000, integer=True, doc="training windows needed"),
    "batchSize": Number(64, 1, 4096, integer=True, doc="examples per step"),
    "passesPerJob": Number(
        50, 1, 10_000, integer=True, doc="passes over the pool per job, at most (see patience)"
    ),
    "maxStepsPerJob": Number(100_000, 1, 100_000_000, integer=True, doc="steps per job"),
    "checkpointEverySteps": Number(200, 0, 100_000_000, integer=True, doc="publish interval"),
    "minimumDrivingMinutes": Number(2.0, 0, 1_000_000, doc="distinct minutes to publish"),
    "newDrivingMinutesPerModel": Number(0.5, 0, 1_000_000, doc="new minutes per model"),
    "learningRate": Number(0.001, 0, 10, exclusive_minimum=True, doc="AdamW learning rate"),
    "weightDecay": Number(0.01, 0, 1, doc="AdamW weight decay"),
    "decodeTimeoutSeconds": Number(300, 0, MAX_SECONDS, exclusive_minimum=True),
    "stopGraceSeconds": Number(20, 1, 3600, doc="time after a stop request or the budget"),
    "cacheMaxMegabytes": Number(4096, 0, 10_000_000, integer=True, doc="window cache bound"),
    "maxVideoMegabytes": Number(4096, 1, 1_000_000, integer=True, doc="largest video file"),
    "maxVideoMinutes": Number(240, 0, 100_000, exclusive_minimum=True),
    "maxFramePixels": Number(3840 * 2160, 1, 1 << 30, integer=True),
    "augment": Number(
        True,
        doc="train-only augmentation: brightness/contrast, and augmentColour, augmentShiftPixels",
    ),
    "augmentColour": Number(
        0.3,
        0,
        1,
        doc="with augment: the spread of a random gain per colour channel (0.2: each of red, "
        "green and blue scaled by 0.9-1.1), as white balance and room light vary",
    ),
    "augmentShiftPixels": Number(
        4,
        0,
        16,
        integer=True,
        doc="with augment: a random vertical translation of the model's picture by up to this "
        "many pixels each way, edges repeated, as a camera's pitch varies (never sideways: "
        "that would look like a change of heading)",
    ),
    "precision": Number(
        "auto",
        doc="training arithmetic: bf16 (autocast), fp32, or auto (bf16 where the CPU computes "
        "it natively, AVX-512 or AMX; fp32 elsewhere, where bf16 is emulated and slower)",
    ),
    "probeMaxSeconds": Number(
        20, 0, 3600, doc="longest learning probe after training (0: no probe)"
    ),
    "heartbeatSeconds": Number(15, 0, 3600, exclusive_minimum=True),
    "maxPausedSeconds": Number(3600, 0, MAX_SECONDS),
    "evalEverySteps": Number(0, 0, 100_000_000, integer=True, doc="periodic held-out eval"),
    "device": Number(
        "cpu",
        doc="where training runs: cpu, cuda (one GPU per local rank), or auto (cuda when "
        "available)",
    ),
    "rankTimeoutSeconds": Number(
        300,
        1,
        MAX_SECONDS,
        doc="distributed jobs: longest wait for another rank at a collective before the job "
        "ends with rank_failed",
    ),
    "valueHistoryDropout": Number(
        0.0,
        0,
        1,
        doc="train-only: the fraction of examples whose state vector hides the last command's "
        "values, so values are predicted from the camera, not copied (docs/learning.md)",
    ),
    "hideNeverSent": Number(
        1.0,
        0,
        1,
        doc="train-only: for a command type silent for 10 s or more, the probability that the "
        "state vector's neverSent flag is redrawn at random, so the policy cannot read the "
        "start of a session from the types not sent yet (docs/learning.md)",
    ),
    "resendValueWeight": Number(
        0.0,
        0,
        1,
        doc="weight of a re-send (same values as the last command of its type) in the value "
        "loss, against 1 for a change: below 1 the value head learns what to send from the "
        "camera instead of copying the last command (docs/learning.md)",
    ),
    "typeChangeEventWeight": Number(
        4.0,
        1,
        100,
        doc="weight in the event loss of a window whose command switches between the stop and "
        "movement roles (a restart after a stop, a stop while driving; other-role commands "
        "such as a horn do not count), against 1 for every other window",
    ),
    "selectionFraction": Number(
        0.15,
        0,
        0.5,
        doc="the time-ordered tail of each training session kept out of training to select "
        "the weights to publish and to stop when they stop improving (0: train every pass, "
        "publish the last weights)",
    ),
    "selectEverySteps": Number(
        200, 1, 100_000_000, integer=True, doc="training steps between selection evaluations"
    ),
    "weightAverageDecay": Number(
        0.995,
        0,
        0.9999,
        doc="the published weights are an exponential moving average of the trained ones "
        "with this decay per step (selected by the same signal); 0: the trained weights",
    ),
    "patience": Number(
        5,
        0,
        1_000_000,
        integer=True,
        doc="selection evaluations without improvement before training stops as converged "
        "(0: never)",
    ),
}
CHOICES = {"precision": ("auto", "bf16", "fp32"), "device": ("cpu", "cuda", "auto")}

GATE_FIELDS: dict[str, Number] = {
    "minHeldOutSessions": Number(2, 0, 1_000_000, integer=True),
    "minHeldOutWindows": Number(128, 0, 100_000_000, integer=True),
    "minCommandEvents": Number(32, 0, 100_000_000, integer=True),
    "minStopEvents": Number(8, 0, 100_000_000, integer=True),
    "minMovementEvents": Number(16, 0, 100_000_000, integer=True),
    "minMovementRecall": Number(0.5, 0, 1),
    "minPrecision": Number(0.5, 0, 1),
    "minRecall": Number(0.5, 0, 1),
    "minStopRecall": Number(0.5, 0, 1),
    "maxNumericMse": Number(0.1, 0, 1_000_000),
    "minVisionGain": Number(
        0.05,
        -1,
        1,
        doc="held-out command F1 with the camera minus F1 of the same weights with constant "
        "grey frames; the camera must reach this or minChangeVisionGain (docs/learning.md)",
    ),
    "minChangeVisionGain": Number(
        0.05,
        -1,
        1,
        doc="held-out recall of the commands that change what the rover does, with the camera "
        "minus with constant grey frames; the camera must reach this or minVisionGain (a model "
        "that ignores the camera gains 0 on both)",
    ),
    "maxValueErrorVsHoldLast": Number(
        0.9,
        0,
        1_000_000,
        doc="value MSE on the commands that change what the rover does, over the "
        "repeat-the-last-command baseline's, at most",
    ),
}

TOP_LEVEL = {
    "root",
    "sessions",
    "actionThreshold",
    "steeringDeadband",
    "config",
    "jobId",
    "seed",
    "gate",
}
DEFAULT_STEERING_DEADBAND = 0.1
STEERING_DEADBAND = Number(
    DEFAULT_STEERING_DEADBAND,
    0,
    2,
    doc="closed loop: the published policy re-sends its movement command when a predicted "
    "value moves more than this from what the rover executes, fired or not (0: only when the "
    "event head fires)",
)
"""docs/learning.md, "Steering between the events"."""


@dataclass(frozen=True)
class Config:
    threads: int
    maxJobSeconds: float
    maxSamples: int
    minimumSamples: int
    batchSize: int
    passesPerJob: int
    maxStepsPerJob: int
    checkpointEverySteps: int
    minimumDrivingMinutes: float
    newDrivingMinutesPerModel: float
    learningRate: float
    weightDecay: float
    decodeTimeoutSeconds: float
    stopGraceSeconds: float
    cacheMaxMegabytes: int
    maxVideoMegabytes: int
    maxVideoMinutes: float
    maxFramePixels: int
    augment: bool
    augmentColour: float
    augmentShiftPixels: int
    precision: str
    heartbeatSeconds: float
    maxPausedSeconds: float
    evalEverySteps: int
    probeMaxSeconds: float
    device: str
    rankTimeoutSeconds: float
    valueHistoryDropout: float
    hideNeverSent: float
    resendValueWeight: float
    typeChangeEventWeight: float
    selectionFraction: float
    selectEverySteps: int
    weightAverageDecay: float
    patience: int

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Gate:
    minHeldOutSessions: int
    minHeldOutWindows: int
    minCommandEvents: int
    minStopEvents: int
    minMovementEvents: int
    minMovementRecall: float
    minPrecision: float
    minRecall: float
    minStopRecall: float
    maxNumericMse: float
    minVisionGain: float
    minChangeVisionGain: float
    maxValueErrorVsHoldLast: float

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Job:
    root: Path
    sessions: tuple[str, ...] | None  # None: every session under root/recordings
    actionThreshold: float
    config: Config
    gate: Gate
    jobId: str | None = None
    seed: int = 0
    steeringDeadband: float = DEFAULT_STEERING_DEADBAND


def load_job_text(text: str) -> Job:
    try:
        document = parse_json(text)
    except BadJson as error:
        raise InvalidJob("", f"not valid job JSON ({error})") from None
    return parse_job(document)


def load_job_file(path: str) -> Job:
    import sys

    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as stream:
                raw = stream.read(16 * 1024 * 1024 + 1)
    except OSError as error:
        raise InvalidJob("", f"cannot read job file {path!r}: {error.strerror}") from None
    if len(raw) > 16 * 1024 * 1024:
        raise InvalidJob("", "job file is larger than 16 MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidJob("", "job file is not UTF-8") from None
    return load_job_text(text)


def _number(value: Any, spec: Number, pointer: str) -> Any:
    if isinstance(spec.default, bool):
        if not isinstance(value, bool):
            raise InvalidJob(pointer, f"must be true or false, got {value!r}")
        return value
    if isinstance(spec.default, str):
        name = pointer.rsplit("/", 1)[-1]
        choices = CHOICES.get(name, ())
        if value not in choices:
            raise InvalidJob(pointer, f"must be one of {', '.join(choices)}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidJob(pointer, f"must be a number, got {json.dumps(value)[:60]}")
    if spec.integer:
        if isinstance(value, float) and not value.is_integer():
            raise InvalidJob(pointer, f"must be a whole number, got {value!r}")
        value = int(value)
    if spec.minimum is not None:
        if spec.exclusive_minimum and value <= spec.minimum:
            raise InvalidJob(pointer, f"must be greater than {spec.minimum:g}, got {value!r}")
        if value < spec.minimum:
            raise InvalidJob(pointer, f"must be at least {spec.minimum:g}, got {value!r}")
    if spec.maximum is not None and value > spec.maximum:
        raise InvalidJob(pointer, f"must be at most {spec.maximum:g}, got {value!r}")
    return value


def _section(document: Any, pointer: str, specs: dict[str, Number]) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise InvalidJob(pointer, "must be an object")
    unknown = sorted(set(document) - set(specs))
    if unknown:
        raise InvalidJob(f"{pointer}/{_escape(unknown[0])}", "unknown field")
    values = {}
    for name, spec in specs.items():
        if name in document:
            values[name] = _number(document[name], spec, f"{pointer}/{name}")
        else:
            values[name] = spec.default
    return values


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def parse_job(document: Any) -> Job:
    if not isinstance(document, dict):
        raise InvalidJob("", "a job must be a JSON object")
    unknown = sorted(set(document) - TOP_LEVEL)
    if unknown:
        raise InvalidJob(f"/{_escape(unknown[0])}", "unknown field")
    root = document.get("root")
    if not isinstance(root, str) or not root or "\x00" in root:
        raise InvalidJob("/root", "must be a non-empty path string")
    sessions = document.get("sessions")
    if sessions is not None and not isinstance(sessions, list):
        raise InvalidJob("/sessions", "must be an array of session ids")
    seen: set[str] = set()
    for index, session_id in enumerate(sessions or []):
        if not valid_identifier(session_id):
            raise InvalidJob(
                f"/sessions/{index}",
                f"session id {json.dumps(session_id)[:80]} must match {IDENTIFIER.pattern}",
            )
        if session_id in seen:
            raise InvalidJob(f"/sessions/{index}", f"session {session_id} is listed twice")
        seen.add(session_id)
    threshold = _number(
        document.get("actionThreshold", 0.5),
        Number(0.5, 0, 1, exclusive_minimum=True),
        "/actionThreshold",
    )
    if threshold >= 1:
        raise InvalidJob("/actionThreshold", f"must be below 1, got {threshold!r}")
    deadband = _number(
        document.get("steeringDeadband", DEFAULT_STEERING_DEADBAND),
        STEERING_DEADBAND,
        "/steeringDeadband",
    )
    job_id = document.get("jobId")
    if job_id is not None and not valid_identifier(job_id):
        raise InvalidJob("/jobId", f"must match {IDENTIFIER.pattern}")
    seed = _number(document.get("seed", 0), Number(0, 0, 2**32 - 1, integer=True), "/seed")
    config = Config(**_section(document.get("config", {}), "/config", CONFIG_FIELDS))
    gate = Gate(**_section(document.get("gate", {}), "/gate", GATE_FIELDS))
    return Job(
        root=Path(root),
        sessions=None if sessions is None else tuple(sessions),
        actionThreshold=float(threshold),
        config=config,
        gate=gate,
        jobId=job_id,
        seed=seed,
        steeringDeadband=float(deadband),
    )
