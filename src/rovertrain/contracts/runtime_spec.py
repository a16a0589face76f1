"""The runtime specification: what `rovertrain export` writes as `runtime.json` and the rover reads.

One record, `RuntimeSpec`, both ways: `to_json` is the document export writes, `from_json`
the validation the rover's runtime runs once before it trusts a folder. Everything the runtime
acts on is a typed field: the policy's input (`PolicySpec`: image, state, tick), its schema,
and the decision rules (`contracts.decision`, declared once with the job's knobs). The
policy's own description (architecture, input and output meaning, as the checkpoint's
model.json holds it) also travels along unchanged for people and other tools.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from rovertrain.contracts.command_schema import Schema, validate_schema
from rovertrain.contracts.decision import (
    RUNTIME_KEYS,
    DecisionRules,
    RecordedRulesError,
    recorded_rules,
)
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.contracts.observation import SUPERSEDED_WITHOUT_BINS
from rovertrain.contracts.settings import names

FORMAT = "rovertrain-runtime/1"
"""manifest.json's format, and runtime.json's for a model of one picture per tick."""
FRAME_HISTORY_FORMAT = "rovertrain-runtime/2"
"""runtime.json's format for a model stacking earlier pictures (`frameHistory` > 1): a
runtime from before frame history refuses it at load instead of failing at the first tick."""
SUPERSEDED_FORMAT = "rovertrain-runtime/3"
"""runtime.json's format for a model whose state shows superseded stop- and movement-role
types without their bins (`input.state.superseded`): a runtime from before it would build the
state the other way, so it refuses the folder at load."""
LEVELS_FORMAT = "rovertrain-runtime/4"
"""runtime.json's format for a model whose levelled value columns give the expected level
(`output.values.levelOutput` "expected"), which the runtime spreads over the levels at its
sends: a runtime from before would send the expected value, a level no person sends, so it
refuses the folder at load."""
FORMATS = (FORMAT, FRAME_HISTORY_FORMAT, SUPERSEDED_FORMAT, LEVELS_FORMAT)
EXPECTED_LEVEL = "expected"
"""`output.values.levelOutput` of policy version 6: a levelled column outputs the expected
level (version 5: the most likely level, which needs no runtime rule)."""
MODEL_FILE = "model.onnx"
RUNTIME_FILE = "runtime.json"
MANIFEST_FILE = "manifest.json"
IMAGE_INPUT = "images"
STATE_INPUT = "states"
OPSET = 18

_DECISION_KEYS = tuple(RUNTIME_KEYS.get(name, name) for name in names(DecisionRules))
# Keys of runtime.json that export adds around the policy's own description.
_EXPORT_KEYS = ("format", *_DECISION_KEYS, "valueNames", "roles", "onnx", "model")


class RuntimeSpecError(ValueError):
    """A runtime.json that is not a runtime specification this runtime can run."""


@dataclass(frozen=True)
class ImageInput:
    """`input.image`: the model's picture input."""

    width: int
    height: int
    frame_history: int
    """Frames stacked along the channels, newest first, one tick apart (1 for a policy
    exported before frame history existed)."""


@dataclass(frozen=True)
class StateInput:
    """`input.state`: the model's command-state input."""

    size: int
    superseded_without_bins: bool
    """Whether the state shows a superseded stop- or movement-role type without its bins
    (`runtime.state.superseded_motion`); False for a policy exported before it."""


@dataclass(frozen=True)
class PolicyInput:
    """`input`: what the model takes, once per tick."""

    image: ImageInput
    state: StateInput
    tick_ms: int


@dataclass(frozen=True)
class PolicySpec:
    """The checkpoint's policy specification (model.json's `specification`).

    What the runtime acts on is typed: `input`, `slots` and `values_per_slot` (the output
    shapes) and `schema` (the command types, one slot each, in output order). `written` is the
    whole specification as model.json holds it (version, architecture, input and output
    meaning, ...), which runtime.json carries unchanged."""

    input: PolicyInput
    slots: int
    values_per_slot: int
    schema: Schema
    written: JsonObject
    # Per command type, the values sent at levels and their levels (policy version 5,
    # `output.values.levels`), and whether the model outputs their expected level (version 6),
    # which the runtime sends as levels (`runtime.policy.level_to_send`).
    level_values: Mapping[str, Mapping[str, tuple[float, ...]]] = field(default_factory=dict)
    expected_levels: bool = False
    # Per command type, the levelled values the person taps (`output.values.spread`, version
    # 6): their expected level is spread over the sends, and a release of their key can be
    # kept back (`keepPressedAbove`).
    spread: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Per command type, how soon the recordings' person re-sent a command that changed
    # nothing, ms (`output.resendAfterMs`; absent: re-sent whenever it fires).
    resend_after: Mapping[str, float] = field(default_factory=dict)
    # Per command type, how many silent windows a window where it fires counted as in the
    # event loss (`output.eventWeights`, rare types balanced); absent: an export made before,
    # fired at probability >= the threshold.
    event_weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def levelled(self) -> dict[str, frozenset[str]]:
        """Per command type, the values sent at levels: the runtime never steers them
        (docs/learning.md, "Values a person sends at a few levels")."""
        return {kind: frozenset(columns) for kind, columns in self.level_values.items()}

    @classmethod
    def from_json(cls, document: Mapping[str, JsonValue]) -> PolicySpec:
        """Validate a policy specification; RuntimeSpecError names the bad field."""
        try:
            schema = validate_schema(document.get("schema"))
        except ValueError as error:
            raise RuntimeSpecError(f"schema: {error}") from None
        given = _object(document.get("input"), "input")
        levels = _levels(document.get("output"))
        image = _object(given.get("image"), "input.image")
        state = _object(given.get("state"), "input.state")
        return cls(
            input=PolicyInput(
                image=ImageInput(
                    width=_count(image.get("width"), "input.image.width"),
                    height=_count(image.get("height"), "input.image.height"),
                    frame_history=_count(image.get("frameHistory", 1), "input.image.frameHistory"),
                ),
                state=StateInput(
                    size=_count(state.get("size"), "input.state.size"),
                    superseded_without_bins=_superseded(state.get("superseded")),
                ),
                tick_ms=_count(given.get("tickMs"), "input.tickMs"),
            ),
            slots=_count(document.get("slots"), "slots"),
            values_per_slot=_count(document.get("valuesPerSlot"), "valuesPerSlot", minimum=0),
            schema=schema,
            written=dict(document),
            level_values=levels,
            expected_levels=_level_output(document.get("output")) == EXPECTED_LEVEL,
            spread=_spread(document.get("output"), levels),
            resend_after=_resend_after(document.get("output")),
            event_weights=_event_weights(document.get("output")),
        )


@dataclass(frozen=True)
class ModelIdentity:
    """Which published model the export came from (model.json's id, name and createdAt)."""

    id: str | None
    name: str | None
    created_at: JsonValue

    def to_json(self) -> JsonObject:
        return {"id": self.id, "name": self.name, "createdAt": self.created_at}

    @classmethod
    def from_json(cls, document: object) -> ModelIdentity:
        """From model.json, or runtime.json's `model` (anything else: nothing known)."""
        identity = document if isinstance(document, Mapping) else {}
        return cls(
            id=_text_or_none(identity.get("id")),
            name=_text_or_none(identity.get("name")),
            created_at=identity.get("createdAt"),
        )


@dataclass(frozen=True)
class RuntimeSpec:
    """Everything the rover needs besides the ONNX graph.

    `policy`: the checkpoint's policy specification. `decision`: when an event fires
    (`actionThreshold`, runtime.json's `threshold`: at probability >= it) and when the
    executed movement is re-sent (`steeringDeadband`: see `runtime.policy.steering_type`, 0:
    off), and when a parked rover is started (`startThreshold`: see
    `runtime.policy.start_type`, 1: off). `model`: which published model it is."""

    policy: PolicySpec
    decision: DecisionRules
    model: ModelIdentity
    opset: int = OPSET

    @property
    def schema(self) -> Schema:
        return self.policy.schema

    @property
    def format(self) -> str:
        """The oldest runtime.json format that describes this model (older runtimes refuse it)."""
        if self.policy.expected_levels and self.policy.level_values:
            return LEVELS_FORMAT
        if self.policy.input.state.superseded_without_bins:
            return SUPERSEDED_FORMAT
        return FRAME_HISTORY_FORMAT if self.policy.input.image.frame_history > 1 else FORMAT

    @property
    def roles(self) -> dict[str, str]:
        return {slot["type"]: slot["role"] for slot in self.schema}

    def to_json(self) -> JsonObject:
        """runtime.json, in the order people read it: format, the policy, then the rules."""
        document: JsonObject = {"format": self.format}
        document.update(self.policy.written)
        document.update(self.decision.runtime_json())
        document["valueNames"] = {slot["type"]: list(slot["values"]) for slot in self.schema}
        document["roles"] = dict(self.roles)
        document["onnx"] = self._onnx()
        document["model"] = self.model.to_json()
        return document

    def _onnx(self) -> JsonObject:
        image = self.policy.input.image
        return {
            "opset": self.opset,
            "inputs": {
                IMAGE_INPUT: {
                    "dtype": "uint8",
                    "shape": ["batch", 3 * image.frame_history, image.height, image.width],
                },
                STATE_INPUT: {
                    "dtype": "float32",
                    "shape": ["batch", self.policy.input.state.size],
                },
            },
            "outputs": {
                "eventLogits": {"shape": ["batch", self.policy.slots], "then": "sigmoid"},
                "values": {"shape": ["batch", self.policy.slots, self.policy.values_per_slot]},
            },
            "normalisation": "inside the graph: (uint8 / 255 - mean) / std",
        }

    @classmethod
    def from_json(cls, document: object) -> RuntimeSpec:
        """Validate a decoded runtime.json once; RuntimeSpecError names what is wrong.

        A runtime.json without `steeringDeadband` or `startThreshold` was exported before
        the knob existed and runs as it did then (the knob's `before` value: 0, only fired
        events; 1, a parked rover started by the event head alone)."""
        if not isinstance(document, dict):
            raise RuntimeSpecError("runtime.json must be a JSON object")
        if document.get("format", FORMAT) not in FORMATS:
            raise RuntimeSpecError(
                f"format {document.get('format')!r} is not one of {', '.join(FORMATS)}"
            )
        try:
            decision = recorded_rules(document, RUNTIME_KEYS)
        except RecordedRulesError as error:
            raise RuntimeSpecError(str(error)) from None
        onnx = document.get("onnx")
        opset = onnx.get("opset", OPSET) if isinstance(onnx, dict) else OPSET
        return cls(
            policy=PolicySpec.from_json(
                {k: v for k, v in document.items() if k not in _EXPORT_KEYS}
            ),
            decision=decision,
            model=ModelIdentity.from_json(document.get("model")),
            opset=_count(opset, "onnx.opset"),
        )


def _object(value: JsonValue, name: str) -> Mapping[str, JsonValue]:
    if not isinstance(value, dict):
        raise RuntimeSpecError(f"{name} must be an object, got {value!r}")
    return value


def _count(value: JsonValue, name: str, minimum: int = 1) -> int:
    """A whole number of at least `minimum` (a whole float, as JSON may write it, included)."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or not isinstance(value, int | float):
        raise RuntimeSpecError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise RuntimeSpecError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def _output_value(output: JsonValue, key: str) -> JsonValue:
    """`output.values[key]`, None where any of it is absent."""
    values = output.get("values") if isinstance(output, dict) else None
    return values.get(key) if isinstance(values, dict) else None


def _levels(output: JsonValue) -> dict[str, dict[str, tuple[float, ...]]]:
    """{type: {value: levels}} from `output.values.levels`; {} when absent (every value
    regressed)."""
    levels = _output_value(output, "levels")
    if levels is None:
        return {}
    named = _object(levels, "output.values.levels")
    found: dict[str, dict[str, tuple[float, ...]]] = {}
    for kind, columns in named.items():
        per_value = _object(columns, f"output.values.levels.{kind}")
        found[kind] = {}
        for name, listed in per_value.items():
            bad = RuntimeSpecError(f"output.values.levels.{kind}.{name}: a list of numbers")
            if not isinstance(listed, list) or not listed:
                raise bad
            numbers = [
                float(level)
                for level in listed
                if isinstance(level, int | float) and not isinstance(level, bool)
            ]
            if len(numbers) != len(listed) or not all(map(math.isfinite, numbers)):
                raise bad
            found[kind][name] = tuple(numbers)
    return found


def _spread(
    output: JsonValue, levels: Mapping[str, Mapping[str, tuple[float, ...]]]
) -> dict[str, frozenset[str]]:
    """{type: value names} from `output.values.spread`, each a levelled value; {} when
    absent."""
    given = _output_value(output, "spread")
    if given is None:
        return {}
    found: dict[str, frozenset[str]] = {}
    for kind, listed in _object(given, "output.values.spread").items():
        levelled = levels.get(kind, {})
        if not isinstance(listed, list) or not all(
            isinstance(name, str) and name in levelled for name in listed
        ):
            raise RuntimeSpecError(
                f"output.values.spread.{kind}: a list of the type's levelled values"
            )
        found[kind] = frozenset(str(name) for name in listed)
    return found


def _level_output(output: JsonValue) -> str | None:
    given = _output_value(output, "levelOutput")
    if given not in (None, EXPECTED_LEVEL):
        raise RuntimeSpecError(f"output.values.levelOutput: {given!r} is not {EXPECTED_LEVEL!r}")
    return given if isinstance(given, str) else None


def _resend_after(output: JsonValue) -> dict[str, float]:
    """{type: ms} from `output.resendAfterMs`; {} when absent."""
    return _numbers_by_type(output, "resendAfterMs", 0.0, 1e7, "a number of milliseconds")


def _event_weights(output: JsonValue) -> dict[str, float]:
    """{type: weight} from `output.eventWeights`; {} when absent."""
    return _numbers_by_type(output, "eventWeights", 1.0, 1e4, "a loss weight from 1 to 10000")


def _numbers_by_type(
    output: JsonValue, key: str, low: float, high: float, what: str
) -> dict[str, float]:
    """{type: number} from `output.<key>`, each in [low, high]; {} when absent."""
    given = output.get(key) if isinstance(output, dict) else None
    if given is None:
        return {}
    found: dict[str, float] = {}
    for kind, number in _object(given, f"output.{key}").items():
        if (
            not isinstance(number, int | float)
            or isinstance(number, bool)
            or not low <= number <= high
        ):
            raise RuntimeSpecError(f"output.{key}.{kind}: {what}")
        found[kind] = float(number)
    return found


def _superseded(encoding: JsonValue) -> bool:
    if encoding is None:
        return False
    if encoding != SUPERSEDED_WITHOUT_BINS:
        raise RuntimeSpecError(
            f"input.state.superseded {encoding!r} is not one this runtime builds"
        )
    return True


def _text_or_none(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
