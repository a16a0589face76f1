"""Which LeRobot action dimensions become which command values, and which episodes to import.

An action map is a small JSON document (`--action-map FILE`):

    {"command": "drive",
     "values": {"speed": 0, "turn": {"name": "theta.vel", "scale": 0.5}},
     "motion": ["speed", "turn"]}

Each value names an action dimension by index or by its name in info.json's
`features.action.names`, optionally scaled (then clipped to [-1, 1]). `motion` lists the values
whose return to zero is a `stop` (default: all of them). The default map is for 2-D rovers
whose action is (linear, angular): `{"values": {"speed": 0, "turn": 1}}`.
Pure functions; a bad map or selection raises `RovertrainError("usage")` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.json_types import JsonObject
from rovertrain.data.recording import MAX_NAME_CHARS, MAX_VALUES
from rovertrain.importers.commands import DRIVE

MAX_EPISODE_RANGE = 1_000_000
DEFAULT_MAP: JsonObject = {"command": DRIVE, "values": {"speed": 0, "turn": 1}}


@dataclass(frozen=True)
class ValueSource:
    index: int
    scale: float = 1.0


@dataclass(frozen=True)
class ActionMap:
    command: str
    values: Mapping[str, ValueSource]
    motion: tuple[str, ...]

    def apply(self, action: Sequence[float]) -> dict[str, float]:
        return {
            name: float(action[source.index]) * source.scale for name, source in self.values.items()
        }


def _usage(pointer: str, message: str) -> RovertrainError:
    return RovertrainError(ErrorCode.USAGE, f"action map {pointer}: {message}")


def _is_number(value: object) -> TypeGuard[int | float]:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _source(pointer: str, spec: object, names: Sequence[str], width: int) -> ValueSource:
    scale: object = 1.0
    if isinstance(spec, dict):
        unknown = set(spec) - {"index", "name", "scale"}
        if unknown:
            raise _usage(pointer, f"unknown key {sorted(unknown)[0]!r} (index, name, scale)")
        scale = spec.get("scale", 1.0)
        spec = spec["index"] if "index" in spec else spec.get("name")
    if isinstance(spec, str):
        if spec not in names:
            raise _usage(pointer, f"no action dimension named {spec!r} (names: {list(names)})")
        spec = list(names).index(spec)
    if not isinstance(spec, int) or isinstance(spec, bool):
        raise _usage(pointer, f"must be an index, a name or {{index|name, scale}}, got {spec!r}")
    if not 0 <= spec < width:
        raise _usage(pointer, f"index {spec} is outside the action's {width} dimensions")
    if not _is_number(scale) or scale == 0:
        raise _usage(f"{pointer}/scale", f"must be a non-zero number, got {scale!r}")
    return ValueSource(spec, float(scale))


def parse_action_map(document: object, names: Sequence[str], width: int) -> ActionMap:
    """The map `document` describes for an action of `width` dimensions named `names`."""
    if not isinstance(document, dict):
        raise _usage("/", "must be a JSON object")
    unknown = set(document) - {"command", "values", "motion"}
    if unknown:
        raise _usage("/", f"unknown key {sorted(unknown)[0]!r} (command, values, motion)")
    command = document.get("command", DRIVE)
    if not isinstance(command, str) or not 1 <= len(command) <= MAX_NAME_CHARS:
        raise _usage("/command", f"must be a command type of 1 to {MAX_NAME_CHARS} characters")
    values = document.get("values")
    if not isinstance(values, dict) or not 1 <= len(values) <= MAX_VALUES:
        raise _usage("/values", f"must be an object of 1 to {MAX_VALUES} value names")
    sources = {}
    for name, spec in values.items():
        if not 1 <= len(name) <= MAX_NAME_CHARS:
            raise _usage(f"/values/{name}", f"value names have 1 to {MAX_NAME_CHARS} characters")
        sources[name] = _source(f"/values/{name}", spec, names, width)
    motion = document.get("motion", list(values))
    if not isinstance(motion, list) or not motion or not all(name in values for name in motion):
        raise _usage("/motion", f"must list some of the values {list(values)}, got {motion!r}")
    return ActionMap(command, sources, tuple(motion))


def parse_episodes(text: str) -> frozenset[int]:
    """`0,2,5-9` as a set of episode indexes."""
    chosen: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise RovertrainError(
                ErrorCode.USAGE, f"--episodes: {part!r} is not an index or a range like 5-9"
            ) from None
        if first < 0 or last < first or last - first > MAX_EPISODE_RANGE:
            raise RovertrainError(ErrorCode.USAGE, f"--episodes: {part!r} is not a valid range")
        chosen.update(range(first, last + 1))
    return frozenset(chosen)
