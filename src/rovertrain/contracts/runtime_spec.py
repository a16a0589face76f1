"""The runtime specification: what `rovertrain export` writes as `runtime.json` and the rover reads.

One record, `RuntimeSpec`, both ways: `to_json` is the document export writes, `from_json`
the validation the rover's runtime runs before it trusts a folder. The fields the runtime acts
on are typed; the policy's own description (`policy`: architecture, input and output meaning,
as the checkpoint's model.json holds it) travels along unchanged for people and other tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rovertrain.contracts.command_schema import Schema, validate_schema
from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.contracts.observation import SUPERSEDED_WITHOUT_BINS

FORMAT = "rovertrain-runtime/1"
"""manifest.json's format, and runtime.json's for a model of one picture per tick."""
FRAME_HISTORY_FORMAT = "rovertrain-runtime/2"
"""runtime.json's format for a model stacking earlier pictures (`frameHistory` > 1): a
runtime from before frame history refuses it at load instead of failing at the first tick."""
SUPERSEDED_FORMAT = "rovertrain-runtime/3"
"""runtime.json's format for a model whose state shows superseded stop- and movement-role
types without their bins (`input.state.superseded`): a runtime from before it would build the
state the other way, so it refuses the folder at load."""
FORMATS = (FORMAT, FRAME_HISTORY_FORMAT, SUPERSEDED_FORMAT)
MODEL_FILE = "model.onnx"
RUNTIME_FILE = "runtime.json"
MANIFEST_FILE = "manifest.json"
IMAGE_INPUT = "images"
STATE_INPUT = "states"
OPSET = 18
NO_STEERING = 0.0
"""What an export written before `steeringDeadband` existed steers with: only fired events."""

# Keys of runtime.json that export adds around the policy's own description.
_EXPORT_KEYS = ("format", "threshold", "steeringDeadband", "valueNames", "roles", "onnx", "model")


class RuntimeSpecError(ValueError):
    """A runtime.json that is not a runtime specification this runtime can run."""


@dataclass(frozen=True)
class ModelIdentity:
    """Which published model the export came from (model.json's id, name and createdAt)."""

    id: str | None
    name: str | None
    created_at: JsonValue

    def to_json(self) -> JsonObject:
        return {"id": self.id, "name": self.name, "createdAt": self.created_at}


@dataclass(frozen=True)
class RuntimeSpec:
    """Everything the rover needs besides the ONNX graph.

    `threshold`: an event fires at probability >= it. `steering_deadband`: see
    `runtime.policy.steering_type` (0: off). `schema`: the command types, one slot each, in
    the model's output order. `policy`: the checkpoint's policy specification (version,
    architecture, input, output, slots, valuesPerSlot, schema, ...), kept as written."""

    policy: JsonObject
    schema: Schema
    threshold: float
    steering_deadband: float
    model: ModelIdentity
    opset: int = OPSET

    @property
    def tick_ms(self) -> int:
        return int(_number(_path(self.policy, "input", "tickMs"), "input.tickMs"))

    @property
    def state_size(self) -> int:
        return int(_number(_path(self.policy, "input", "state", "size"), "input.state.size"))

    @property
    def image_size(self) -> tuple[int, int]:
        """(width, height) of the model's image input."""
        width = _number(_path(self.policy, "input", "image", "width"), "input.image.width")
        height = _number(_path(self.policy, "input", "image", "height"), "input.image.height")
        return int(width), int(height)

    @property
    def frame_history(self) -> int:
        """Frames stacked along the image input's channels, newest first, one tick apart
        (1 for a policy exported before frame history existed)."""
        image = _path(self.policy, "input", "image")
        history = image.get("frameHistory", 1) if isinstance(image, dict) else 1
        return int(_number(history, "input.image.frameHistory"))

    @property
    def superseded_without_bins(self) -> bool:
        """Whether the state shows a superseded stop- or movement-role type without its bins
        (`runtime.state.superseded_motion`); False for a policy exported before it."""
        state = _path(self.policy, "input", "state")
        encoding = state.get("superseded") if isinstance(state, dict) else None
        if encoding is None:
            return False
        if encoding != SUPERSEDED_WITHOUT_BINS:
            raise RuntimeSpecError(
                f"input.state.superseded {encoding!r} is not one this runtime builds"
            )
        return True

    @property
    def format(self) -> str:
        """The oldest runtime.json format that describes this model (older runtimes refuse it)."""
        if self.superseded_without_bins:
            return SUPERSEDED_FORMAT
        return FRAME_HISTORY_FORMAT if self.frame_history > 1 else FORMAT

    @property
    def slots(self) -> int:
        return int(_number(self.policy.get("slots"), "slots"))

    @property
    def values_per_slot(self) -> int:
        return int(_number(self.policy.get("valuesPerSlot"), "valuesPerSlot"))

    @property
    def roles(self) -> dict[str, str]:
        return {slot["type"]: slot["role"] for slot in self.schema}

    def to_json(self) -> JsonObject:
        """runtime.json, in the order people read it: format, the policy, then the rules."""
        document: JsonObject = {"format": self.format}
        document.update(self.policy)
        document["threshold"] = self.threshold
        document["steeringDeadband"] = self.steering_deadband
        document["valueNames"] = {slot["type"]: list(slot["values"]) for slot in self.schema}
        document["roles"] = dict(self.roles)
        document["onnx"] = self._onnx()
        document["model"] = self.model.to_json()
        return document

    def _onnx(self) -> JsonObject:
        width, height = self.image_size
        return {
            "opset": self.opset,
            "inputs": {
                IMAGE_INPUT: {
                    "dtype": "uint8",
                    "shape": ["batch", 3 * self.frame_history, height, width],
                },
                STATE_INPUT: {"dtype": "float32", "shape": ["batch", self.state_size]},
            },
            "outputs": {
                "eventLogits": {"shape": ["batch", self.slots], "then": "sigmoid"},
                "values": {"shape": ["batch", self.slots, self.values_per_slot]},
            },
            "normalisation": "inside the graph: (uint8 / 255 - mean) / std",
        }

    @classmethod
    def from_json(cls, document: object) -> RuntimeSpec:
        """Validate a decoded runtime.json; RuntimeSpecError names what is wrong."""
        if not isinstance(document, dict):
            raise RuntimeSpecError("runtime.json must be a JSON object")
        if document.get("format", FORMAT) not in FORMATS:
            raise RuntimeSpecError(
                f"format {document.get('format')!r} is not one of {', '.join(FORMATS)}"
            )
        policy: JsonObject = {k: v for k, v in document.items() if k not in _EXPORT_KEYS}
        try:
            schema = validate_schema(document.get("schema"))
        except ValueError as error:
            raise RuntimeSpecError(f"schema: {error}") from None
        threshold = _number(document.get("threshold"), "threshold")
        # [0, 1]: `export --threshold` has always allowed 0 (fire every tick); a job's
        # actionThreshold is narrower, (0, 1).
        if not 0 <= threshold <= 1:
            raise RuntimeSpecError(f"threshold {threshold} is not between 0 and 1")
        deadband = _number(document.get("steeringDeadband", NO_STEERING), "steeringDeadband")
        if deadband < 0:
            raise RuntimeSpecError(f"steeringDeadband {deadband} is negative")
        model = document.get("model")
        identity = model if isinstance(model, dict) else {}
        onnx = document.get("onnx")
        opset = onnx.get("opset", OPSET) if isinstance(onnx, dict) else OPSET
        spec = cls(
            policy=policy,
            schema=schema,
            threshold=threshold,
            steering_deadband=deadband,
            model=ModelIdentity(
                id=_text_or_none(identity.get("id")),
                name=_text_or_none(identity.get("name")),
                created_at=identity.get("createdAt"),
            ),
            opset=int(_number(opset, "onnx.opset")),
        )
        # Read every figure the runtime acts on once, so a malformed document fails here.
        _ = (spec.tick_ms, spec.state_size, spec.image_size, spec.frame_history)
        _ = spec.superseded_without_bins
        return spec


def _path(document: Mapping[str, JsonValue], *keys: str) -> JsonValue:
    value: JsonValue = dict(document)
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _number(value: JsonValue | object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RuntimeSpecError(f"{name} must be a number, got {value!r}")
    return float(value)


def _text_or_none(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
