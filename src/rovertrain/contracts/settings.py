"""Settings declared once: each knob's default, bounds and meaning on the field that holds it.

A settings class is a frozen dataclass whose every field is declared with `knob(...)`; the
layer that uses the knobs owns the class (data/settings.py, learn/settings.py, ...). From
that one declaration come the validation of a decoded JSON object (`parse_settings`, which
names the JSON pointer of the first bad field), the JSON written back (`settings_json`), the
JSON Schema properties (`settings_json_schema`) and the documentation table
(`settings_table`); and the reading of the knobs a record carries on from a job (model.json,
runtime.json: `parse_record`), where a record written before a knob existed ran with the
knob's `before` value.

A composite settings class groups settings classes that share one flat JSON object (the job
file's `config`): each of its fields holds a settings class (`name: Group =
field(default_factory=Group)`), knob names are unique across its groups, and an optional
`KNOB_ORDER` class attribute fixes the order of the flat object's keys (validation reports the
first bad key in that order; JSON and schema follow it); without one, groups and knobs come
in declaration order.

Standard library only: contracts imports nothing of the project but contracts.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias, TypeVar, cast

from rovertrain.contracts.errors import InvalidJob

KnobValue: TypeAlias = bool | int | float | str
"""What a knob holds: a JSON boolean, number or string (one of its choices)."""

V = TypeVar("V", bound=KnobValue)
S = TypeVar("S")

MAX_SECONDS = 7 * 24 * 3600
"""The longest duration a knob in seconds accepts: a week."""

_KNOB = "rovertrain.knob"


@dataclass(frozen=True)
class Knob:
    """One knob's declaration: default, bounds, whole-number-ness, choices and meaning.

    The kind follows the default: a bool is a boolean knob, a str one of `choices`, any other
    number a numeric knob (`integer`: whole numbers only, taken as int)."""

    default: KnobValue
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    choices: tuple[str, ...] | None = None
    doc: str = ""
    before: KnobValue | None = None
    """What a record written before the knob existed (a model.json or runtime.json without
    it) ran with; None: the default. `parse_record` reads it, never a job file."""

    def __post_init__(self) -> None:
        problem = _declaration_problem(self)
        if problem:
            raise ValueError(f"bad knob declaration {self!r}: {problem}")

    @property
    def kind(self) -> type[bool] | type[str] | type[int] | type[float]:
        """The field type the declaration implies: bool, str, int (`integer`) or float."""
        if isinstance(self.default, bool):
            return bool
        if isinstance(self.default, str):
            return str
        return int if self.integer else float


def _declaration_problem(spec: Knob) -> str | None:
    bounded = spec.minimum is not None or spec.maximum is not None
    exclusive = spec.exclusive_minimum or spec.exclusive_maximum
    if isinstance(spec.default, bool | str):
        if bounded or exclusive or spec.integer or spec.before is not None:
            return "a boolean or choice knob has no bounds and no before value"
        if isinstance(spec.default, bool):
            return "a boolean knob has no choices" if spec.choices is not None else None
        if not spec.choices or spec.default not in spec.choices:
            return "a choice knob needs choices that include its default"
        return None
    if spec.choices is not None:
        return "a numeric knob has no choices"
    if spec.integer and not isinstance(spec.default, int):
        return "an integer knob needs an int default"
    if spec.exclusive_minimum and spec.minimum is None:
        return "exclusive_minimum without a minimum"
    if spec.exclusive_maximum and spec.maximum is None:
        return "exclusive_maximum without a maximum"
    try:
        _checked(spec.default, spec, "")
    except InvalidJob as error:
        return f"the default is out of bounds ({error.message})"
    if spec.before is not None:
        if isinstance(spec.before, bool) or not isinstance(spec.before, int | float):
            return "a numeric knob's before value is a number"
        try:
            _checked(spec.before, _closed(spec), "")
        except InvalidJob as error:
            return f"the before value is out of bounds ({error.message})"
    return None


def knob(
    default: V,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    integer: bool = False,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    choices: Sequence[str] | None = None,
    doc: str = "",
    before: float | None = None,
) -> V:
    """A settings field: `name: int = knob(64, 1, 4096, integer=True, doc="...")`.

    The field's name is the knob's JSON name; its default is `default`. `before` (numeric
    knobs): what a record written before the knob existed ran with, when not the default."""
    spec = Knob(
        default=default,
        minimum=minimum,
        maximum=maximum,
        integer=integer,
        exclusive_minimum=exclusive_minimum,
        exclusive_maximum=exclusive_maximum,
        choices=None if choices is None else tuple(choices),
        doc=doc,
        before=before,
    )
    return field(default=default, metadata={_KNOB: spec})


class KnobField(NamedTuple):
    """A declared knob: its JSON name, field type, declaration and, in a composite, the name
    of the group field that holds it (None in a plain settings class)."""

    name: str
    type: type
    spec: Knob
    group: str | None = None


class Group(NamedTuple):
    """A composite's group: the field name and its settings class."""

    name: str
    cls: type


def groups(cls: type) -> tuple[Group, ...]:
    """The groups of a composite settings class, in declaration order (empty for a plain one):
    its fields whose type is a dataclass."""
    hints = typing.get_type_hints(cls)
    return tuple(
        Group(f.name, hints[f.name]) for f in _fields(cls) if _holds_settings(hints[f.name])
    )


def _holds_settings(hint: object) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def knobs(cls: type) -> tuple[KnobField, ...]:
    """Every knob of a settings class (flattened for a composite), checked against its field
    types: raises TypeError on a field neither declared with `knob(...)` nor holding a
    settings class, a field type that differs from the declaration's kind, a name used twice,
    or a `KNOB_ORDER` that does not list each knob exactly once."""
    found = _KNOBS.get(cls)
    if found is None:
        found = _KNOBS[cls] = _declared_knobs(cls)
    return found


_KNOBS: dict[type, tuple[KnobField, ...]] = {}


def _declared_knobs(cls: type) -> tuple[KnobField, ...]:
    hints = typing.get_type_hints(cls)
    found: list[KnobField] = []
    for declared in _fields(cls):
        held = hints[declared.name]
        if _holds_settings(held):
            found.extend(KnobField(k.name, k.type, k.spec, declared.name) for k in knobs(held))
            continue
        spec = declared.metadata.get(_KNOB)
        if not isinstance(spec, Knob):
            raise TypeError(f"{cls.__name__}.{declared.name} is not declared with knob(...)")
        if hints[declared.name] is not spec.kind:
            raise TypeError(
                f"{cls.__name__}.{declared.name} is declared as {hints[declared.name]!r} but "
                f"its knob is a {spec.kind.__name__}"
            )
        found.append(KnobField(declared.name, spec.kind, spec))
    listed = [k.name for k in found]
    twice = sorted({name for name in listed if listed.count(name) > 1})
    if twice:
        raise TypeError(f"{cls.__name__} declares {', '.join(twice)} more than once")
    order = getattr(cls, "KNOB_ORDER", None)
    if order is None:
        return tuple(found)
    if sorted(order) != sorted(listed):
        missing, extra = set(listed) - set(order), set(order) - set(listed)
        raise TypeError(
            f"{cls.__name__}.KNOB_ORDER must list each knob once "
            f"(missing {sorted(missing)}, unknown {sorted(extra)})"
        )
    by_name = {k.name: k for k in found}
    return tuple(by_name[name] for name in order)


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a settings dataclass")
    return dataclasses.fields(cls)


def names(cls: type) -> tuple[str, ...]:
    """The JSON names of a settings class's knobs, in order."""
    return tuple(k.name for k in knobs(cls))


def escape_pointer(token: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _checked(value: object, spec: Knob, pointer: str) -> KnobValue:
    """`value` if it satisfies `spec` (an integer knob's whole float as int), else InvalidJob."""
    if isinstance(spec.default, bool):
        if not isinstance(value, bool):
            raise InvalidJob(pointer, f"must be true or false, got {value!r}")
        return value
    if isinstance(spec.default, str):
        choices = spec.choices or ()
        if value not in choices:
            raise InvalidJob(pointer, f"must be one of {', '.join(choices)}, got {value!r}")
        return choices[choices.index(value)]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidJob(pointer, f"must be a number, got {json.dumps(value)[:60]}")
    number: int | float = value
    if spec.integer:
        if isinstance(number, float) and not number.is_integer():
            raise InvalidJob(pointer, f"must be a whole number, got {number!r}")
        number = int(number)
    if spec.minimum is not None:
        if spec.exclusive_minimum and number <= spec.minimum:
            raise InvalidJob(pointer, f"must be greater than {spec.minimum:g}, got {number!r}")
        if number < spec.minimum:
            raise InvalidJob(pointer, f"must be at least {spec.minimum:g}, got {number!r}")
    if spec.maximum is not None:
        if number > spec.maximum:
            raise InvalidJob(pointer, f"must be at most {spec.maximum:g}, got {number!r}")
        if spec.exclusive_maximum and number >= spec.maximum:
            raise InvalidJob(pointer, f"must be below {spec.maximum:g}, got {number!r}")
    return number


def parse_settings(cls: type[S], section: object, pointer: str) -> S:
    """`section` (a decoded JSON object) checked against `cls`'s knobs, absent ones defaulted.

    Raises InvalidJob naming `pointer` when `section` is not an object, `pointer/<key>` for
    the first unknown key (sorted) or the first bad value (in knob order)."""
    if not isinstance(section, Mapping):
        raise InvalidJob(pointer, "must be an object")
    declared = knobs(cls)
    unknown = sorted(set(section) - {k.name for k in declared})
    if unknown:
        raise InvalidJob(f"{pointer}/{escape_pointer(unknown[0])}", "unknown field")
    values: dict[str | None, dict[str, KnobValue]] = {None: {}}
    for k in declared:
        if k.name in section:
            value = _checked(section[k.name], k.spec, f"{pointer}/{escape_pointer(k.name)}")
        else:
            value = k.spec.default
        values.setdefault(k.group, {})[k.name] = value
    build = cast(Callable[..., S], cls)
    parts = {part.name: part.cls(**values.get(part.name, {})) for part in groups(cls)}
    return build(**values[None], **parts)


def _closed(spec: Knob) -> Knob:
    """`spec` with its bounds closed: what a record may hold (see `parse_record`)."""
    return dataclasses.replace(spec, exclusive_minimum=False, exclusive_maximum=False, before=None)


def parse_record(
    cls: type[S], record: Mapping[str, object], keys: Mapping[str, str] | None = None
) -> S:
    """The knobs of a plain settings class as a record holds them (model.json, runtime.json):
    each under its own name, or under `keys[name]` where the record names it otherwise; the
    record's other keys are its own business.

    A knob the record lacks takes its `before` value (else its default): the record was written
    before the knob existed, and that is what it ran with. The bounds are closed, because a
    record holds what was run, command-line overrides included (`export --threshold 0`).
    Raises InvalidJob naming `/<key>` of the first bad value, in knob order."""
    if groups(cls):
        raise TypeError(f"{cls.__name__} is a composite: records hold plain settings classes")
    renamed = keys or {}
    values: dict[str, KnobValue] = {}
    for k in knobs(cls):
        key = renamed.get(k.name, k.name)
        if key in record:
            values[k.name] = _checked(record[key], _closed(k.spec), f"/{escape_pointer(key)}")
        elif k.spec.before is None:
            values[k.name] = k.spec.default
        else:
            values[k.name] = _checked(k.spec.before, _closed(k.spec), f"/{escape_pointer(key)}")
    build = cast(Callable[..., S], cls)
    return build(**values)


def settings_json(settings: object) -> dict[str, KnobValue]:
    """A settings object as its flat JSON object, keys in knob order."""
    result: dict[str, KnobValue] = {}
    for k in knobs(type(settings)):
        holder = settings if k.group is None else getattr(settings, k.group)
        result[k.name] = getattr(holder, k.name)
    return result


def knob_json_schema(spec: Knob) -> dict[str, Any]:
    """One knob's JSON Schema: type or enum, bounds, default and description."""
    result: dict[str, Any]
    if isinstance(spec.default, bool):
        result = {"type": "boolean"}
    elif isinstance(spec.default, str):
        result = {"enum": list(spec.choices or ())}
    else:
        result = {"type": "integer" if spec.integer else "number"}
        if spec.minimum is not None:
            result["exclusiveMinimum" if spec.exclusive_minimum else "minimum"] = spec.minimum
        if spec.maximum is not None:
            result["exclusiveMaximum" if spec.exclusive_maximum else "maximum"] = spec.maximum
    result["default"] = spec.default
    if spec.doc:
        result["description"] = spec.doc
    return result


def settings_json_schema(cls: type) -> dict[str, dict[str, Any]]:
    """The JSON Schema `properties` of a settings class's (flat) object, in knob order."""
    return {k.name: knob_json_schema(k.spec) for k in knobs(cls)}


TABLE_HEADER = "| name | type | bounds | default | description |\n| --- | --- | --- | --- | --- |"


def settings_table(cls: type) -> str:
    """A markdown table of a settings class's knobs: name, type, bounds, default, description."""
    rows = [TABLE_HEADER]
    for k in knobs(cls):
        cells = (
            f"`{k.name}`",
            _type_text(k.spec),
            _bounds_text(k.spec),
            _default_text(k.spec.default),
            k.spec.doc,
        )
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _type_text(spec: Knob) -> str:
    if isinstance(spec.default, bool):
        return "boolean"
    if isinstance(spec.default, str):
        return "string"
    return "integer" if spec.integer else "number"


def _bounds_text(spec: Knob) -> str:
    if spec.choices is not None:
        return "one of " + ", ".join(f"`{choice}`" for choice in spec.choices)
    low, high = spec.minimum, spec.maximum
    if low is not None and high is not None:
        opening = "(" if spec.exclusive_minimum else "["
        closing = ")" if spec.exclusive_maximum else "]"
        return f"{opening}{_number_text(low)}, {_number_text(high)}{closing}"
    if low is not None:
        return f"{'>' if spec.exclusive_minimum else '≥'} {_number_text(low)}"
    if high is not None:
        return f"{'<' if spec.exclusive_maximum else '≤'} {_number_text(high)}"
    return ""


def _default_text(value: KnobValue) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f"`{value}`"
    return _number_text(value)


def _number_text(value: float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
