"""The job file: strict loading and validation into typed, immutable settings.

Each knob is declared once, by the layer that uses it (contracts/settings.py has the
primitive): `Config` composes those groups into the job file's flat `config` object, and
`parse_job` checks a decoded document against them, naming the JSON pointer of the first bad
field. Nothing here touches the disk except reading the job text itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rovertrain.contracts.decision import DecisionRules
from rovertrain.contracts.errors import InvalidJob
from rovertrain.contracts.identifiers import IDENTIFIER, valid_identifier
from rovertrain.contracts.settings import (
    escape_pointer,
    names,
    parse_settings,
    settings_json,
)
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.data.settings import Decoding, Sampling
from rovertrain.gate.settings import Gate, Publication
from rovertrain.job.settings import Budget, Execution, Seeding
from rovertrain.learn.settings import (
    Augmentation,
    LossWeights,
    Monitoring,
    Optimisation,
    Selection,
)

if TYPE_CHECKING:
    from rovertrain.data.curation import Curation


@dataclass(frozen=True)
class Config:
    """The job file's `config`: one flat object of every layer's knobs, grouped here by the
    layer and concern that use them (`config.optimisation.batchSize`)."""

    KNOB_ORDER: ClassVar[tuple[str, ...]] = (
        "threads",
        "maxJobSeconds",
        "maxSamples",
        "sessionsPerJob",
        "heldOutSessions",
        "minimumSamples",
        "batchSize",
        "passesPerJob",
        "maxStepsPerJob",
        "checkpointEverySteps",
        "minimumDrivingMinutes",
        "newDrivingMinutesPerModel",
        "canaryMinutes",
        "canaryWhen",
        "learningRate",
        "weightDecay",
        "decodeTimeoutSeconds",
        "stopGraceSeconds",
        "cacheMaxMegabytes",
        "maxVideoMegabytes",
        "maxVideoMinutes",
        "maxFramePixels",
        "augment",
        "augmentColour",
        "augmentShiftPixels",
        "precision",
        "heartbeatSeconds",
        "maxPausedSeconds",
        "evalEverySteps",
        "probeMaxSeconds",
        "device",
        "rankTimeoutSeconds",
        "valueHistoryDropout",
        "hideNeverSent",
        "resendValueWeight",
        "typeChangeEventWeight",
        "selectionFraction",
        "takeOverRepeats",
        "selectEverySteps",
        "weightAverageDecay",
        "patience",
    )
    """The flat object's key order, as files written before the groups existed have it
    (model.json, the events that carry it; the schema's properties follow it);
    `knobs(Config)` checks that it names each knob once."""

    execution: Execution = field(default_factory=Execution)
    budget: Budget = field(default_factory=Budget)
    decoding: Decoding = field(default_factory=Decoding)
    sampling: Sampling = field(default_factory=Sampling)
    optimisation: Optimisation = field(default_factory=Optimisation)
    augmentation: Augmentation = field(default_factory=Augmentation)
    loss: LossWeights = field(default_factory=LossWeights)
    selection: Selection = field(default_factory=Selection)
    monitoring: Monitoring = field(default_factory=Monitoring)
    publication: Publication = field(default_factory=Publication)

    def to_json(self) -> dict[str, Any]:
        """The flat `config` object (every knob, defaults included), in KNOB_ORDER."""
        return dict(settings_json(self))


TOP_LEVEL = frozenset(
    {"root", "sessions", "config", "jobId", "gate", *names(DecisionRules), *names(Seeding)}
)


@dataclass(frozen=True)
class Job:
    root: Path
    sessions: tuple[str, ...] | None  # None: every session under root/recordings
    decision: DecisionRules
    config: Config
    gate: Gate
    jobId: str | None = None
    seed: int = 0
    # Not in the job file: the root's curation.json, read once at the job's start
    # (job/preflight.py `with_curation`); None: not read yet.
    curation: Curation | None = None

    @property
    def actionThreshold(self) -> float:
        return float(self.decision.actionThreshold)

    @property
    def steeringDeadband(self) -> float:
        return float(self.decision.steeringDeadband)


def load_job_text(text: str) -> Job:
    try:
        document = parse_json(text)
    except BadJson as error:
        raise InvalidJob("", f"not valid job JSON ({error.detail})") from None
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


def parse_job(document: Any) -> Job:
    if not isinstance(document, dict):
        raise InvalidJob("", "a job must be a JSON object")
    unknown = sorted(set(document) - TOP_LEVEL)
    if unknown:
        raise InvalidJob(f"/{escape_pointer(unknown[0])}", "unknown field")
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
    decision = parse_settings(DecisionRules, _present(document, DecisionRules), "")
    job_id = document.get("jobId")
    if job_id is not None and not valid_identifier(job_id):
        raise InvalidJob("/jobId", f"must match {IDENTIFIER.pattern}")
    seeding = parse_settings(Seeding, _present(document, Seeding), "")
    config = parse_settings(Config, document.get("config", {}), "/config")
    gate = parse_settings(Gate, document.get("gate", {}), "/gate")
    return Job(
        root=Path(root),
        sessions=None if sessions is None else tuple(sessions),
        decision=decision,
        config=config,
        gate=gate,
        jobId=job_id,
        seed=seeding.seed,
    )


def _present(document: dict[str, Any], cls: type) -> dict[str, Any]:
    """The top-level keys of `document` that are `cls`'s knobs."""
    return {name: document[name] for name in names(cls) if name in document}
