"""The settings primitive: one declaration gives validation, JSON, schema and documentation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from rovertrain.contracts.errors import InvalidJob
from rovertrain.contracts.settings import (
    Knob,
    KnobField,
    groups,
    knob,
    knobs,
    parse_record,
    parse_settings,
    settings_json,
    settings_json_schema,
    settings_table,
)


@dataclass(frozen=True)
class Sample:
    """Sample: a knob of each kind."""

    count: int = knob(3, 1, 10, integer=True, doc="how many")
    ratio: float = knob(0.5, 0, 1, exclusive_minimum=True, exclusive_maximum=True)
    scale: float = knob(2, 0, 100)
    flag: bool = knob(True, doc="on | off")
    mode: str = knob("a", choices=("a", "b"))


@dataclass(frozen=True)
class Other:
    speed: float = knob(1.0, 0, 5)


@dataclass(frozen=True)
class Both:
    KNOB_ORDER: ClassVar[tuple[str, ...]] = ("speed", "count", "ratio", "scale", "flag", "mode")

    sample: Sample = field(default_factory=Sample)
    other: Other = field(default_factory=Other)


def refused(section: Any, cls: type = Sample) -> InvalidJob:
    with pytest.raises(InvalidJob) as caught:
        parse_settings(cls, section, "/s")
    assert caught.value.code == "invalid_job"
    assert caught.value.message.startswith(f"{caught.value.pointer or '/'}: ")
    return caught.value


def reason(section: Any, cls: type = Sample) -> tuple[str, str]:
    error = refused(section, cls)
    return error.pointer, error.message.split(": ", 1)[1]


def test_absent_knobs_take_their_declared_defaults() -> None:
    assert parse_settings(Sample, {}, "/s") == Sample()
    assert Sample() == Sample(count=3, ratio=0.5, scale=2, flag=True, mode="a")
    assert settings_json(Sample()) == {
        "count": 3, "ratio": 0.5, "scale": 2, "flag": True, "mode": "a",
    }  # fmt: skip


def test_knobs_list_name_type_and_declaration_in_order() -> None:
    listed = knobs(Sample)
    assert [(k.name, k.type) for k in listed] == [
        ("count", int), ("ratio", float), ("scale", float), ("flag", bool), ("mode", str),
    ]  # fmt: skip
    assert listed[0] == KnobField("count", int, Knob(3, 1, 10, integer=True, doc="how many"))


def test_integer_knobs_take_whole_numbers_only() -> None:
    parsed = parse_settings(Sample, {"count": 4.0}, "/s")
    assert parsed.count == 4 and type(parsed.count) is int
    assert reason({"count": 1.5}) == ("/s/count", "must be a whole number, got 1.5")
    assert reason({"count": True}) == ("/s/count", "must be a number, got true")
    assert reason({"count": "3"}) == ("/s/count", 'must be a number, got "3"')
    assert reason({"count": None}) == ("/s/count", "must be a number, got null")


def test_bounds_are_inclusive_unless_declared_exclusive() -> None:
    assert parse_settings(Sample, {"count": 1}, "/s").count == 1
    assert parse_settings(Sample, {"count": 10}, "/s").count == 10
    assert reason({"count": 0}) == ("/s/count", "must be at least 1, got 0")
    assert reason({"count": 11}) == ("/s/count", "must be at most 10, got 11")
    assert parse_settings(Sample, {"ratio": 0.999}, "/s").ratio == 0.999
    assert reason({"ratio": 0}) == ("/s/ratio", "must be greater than 0, got 0")
    assert reason({"ratio": -1}) == ("/s/ratio", "must be greater than 0, got -1")
    assert reason({"ratio": 1}) == ("/s/ratio", "must be below 1, got 1")
    assert reason({"ratio": 2}) == ("/s/ratio", "must be at most 1, got 2")


def test_numbers_keep_the_type_they_were_written_with() -> None:
    """A non-integer knob holds 3 as 3 and 2.5 as 2.5: files written back are unchanged."""
    parsed = parse_settings(Sample, {"scale": 3}, "/s")
    assert type(parsed.scale) is int and settings_json(parsed)["scale"] == 3
    assert type(parse_settings(Sample, {"scale": 2.5}, "/s").scale) is float


def test_booleans_and_choices() -> None:
    assert parse_settings(Sample, {"flag": False}, "/s").flag is False
    assert reason({"flag": 1}) == ("/s/flag", "must be true or false, got 1")
    assert reason({"flag": "true"}) == ("/s/flag", "must be true or false, got 'true'")
    assert parse_settings(Sample, {"mode": "b"}, "/s").mode == "b"
    assert reason({"mode": "c"}) == ("/s/mode", "must be one of a, b, got 'c'")
    assert reason({"mode": ["a"]}) == ("/s/mode", "must be one of a, b, got ['a']")


def test_unknown_keys_and_non_objects_are_refused() -> None:
    assert reason({"zeta": 1, "alpha": 2, "count": 0}) == ("/s/alpha", "unknown field")
    assert reason({"a/b~": 1}) == ("/s/a~1b~0", "unknown field")
    assert reason([]) == ("/s", "must be an object")
    assert reason(None) == ("/s", "must be an object")
    assert reason(3, Both) == ("/s", "must be an object")


def test_the_first_bad_knob_in_declaration_order_is_named() -> None:
    assert reason({"mode": "c", "count": 0})[0] == "/s/count"


def test_a_composite_reads_one_flat_object_into_its_groups() -> None:
    assert groups(Both) == (("sample", Sample), ("other", Other))
    assert groups(Sample) == ()
    parsed = parse_settings(Both, {"speed": 2, "count": 4}, "/c")
    assert parsed == Both(sample=Sample(count=4), other=Other(speed=2))
    assert list(settings_json(parsed)) == list(Both.KNOB_ORDER)
    assert settings_json(parsed)["speed"] == 2 and settings_json(parsed)["count"] == 4
    assert list(settings_json_schema(Both)) == list(Both.KNOB_ORDER)
    assert reason({"sample": {}}, Both) == ("/s/sample", "unknown field")
    # validation follows KNOB_ORDER: speed (of the second group) comes first
    assert reason({"count": 0, "speed": -1}, Both)[0] == "/s/speed"
    assert [k.group for k in knobs(Both)] == ["other"] + ["sample"] * 5


def test_the_json_schema_of_each_kind() -> None:
    assert settings_json_schema(Sample) == {
        "count": {
            "type": "integer", "minimum": 1, "maximum": 10, "default": 3, "description": "how many",
        },
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5},
        "scale": {"type": "number", "minimum": 0, "maximum": 100, "default": 2},
        "flag": {"type": "boolean", "default": True, "description": "on | off"},
        "mode": {"enum": ["a", "b"], "default": "a"},
    }  # fmt: skip


def test_the_markdown_table() -> None:
    assert settings_table(Sample) == (
        "| name | type | bounds | default | description |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| `count` | integer | [1, 10] | 3 | how many |\n"
        "| `ratio` | number | (0, 1) | 0.5 |  |\n"
        "| `scale` | number | [0, 100] | 2 |  |\n"
        "| `flag` | boolean |  | `true` | on \\| off |\n"
        "| `mode` | string | one of `a`, `b` | `a` |  |\n"
    )


@pytest.mark.parametrize(
    "declare",
    [
        lambda: knob(5, 0, 1),  # default out of bounds
        lambda: knob(0, 0, 1, exclusive_minimum=True),
        lambda: knob(1.5, integer=True),
        lambda: knob(True, 0, 1),
        lambda: knob("x", choices=("a",)),
        lambda: knob("x"),
        lambda: knob(1, choices=("a",)),
        lambda: knob(1, exclusive_minimum=True),
        lambda: knob(1, exclusive_maximum=True),
        lambda: knob(0.5, 0, 1, before=1.5),  # before out of bounds
        lambda: knob(True, before=0.0),  # only numeric knobs have one
    ],
)
def test_inconsistent_declarations_fail_at_once(declare: Any) -> None:
    with pytest.raises(ValueError, match="bad knob declaration"):
        declare()


def test_field_types_must_match_their_knobs() -> None:
    @dataclass(frozen=True)
    class Mistyped:
        n: float = knob(1, integer=True)

    @dataclass(frozen=True)
    class Undeclared:
        n: int = 1

    @dataclass(frozen=True)
    class Twice:
        a: Other = field(default_factory=Other)
        b: Other = field(default_factory=Other)

    @dataclass(frozen=True)
    class Unordered:
        KNOB_ORDER: ClassVar[tuple[str, ...]] = ("speed",)
        sample: Sample = field(default_factory=Sample)
        other: Other = field(default_factory=Other)

    for cls, message in (
        (Mistyped, "declared as"),
        (Undeclared, "not declared with knob"),
        (Twice, "more than once"),
        (Unordered, "KNOB_ORDER"),
    ):
        with pytest.raises(TypeError, match=message):
            knobs(cls)


@dataclass(frozen=True)
class Recorded:
    threshold: float = knob(0.5, 0, 1, exclusive_minimum=True, exclusive_maximum=True)
    deadband: float = knob(0.1, 0, 2, before=0.0)


def test_a_record_lacking_a_knob_holds_what_ran_before_it_existed() -> None:
    assert parse_record(Recorded, {}) == Recorded(threshold=0.5, deadband=0.0)
    assert parse_settings(Recorded, {}, "") == Recorded(threshold=0.5, deadband=0.1)
    # Its own names where it has them, its other keys its own business.
    record = {"p": 0.3, "deadband": 0.2, "other": [1]}
    assert parse_record(Recorded, record, {"threshold": "p"}) == Recorded(0.3, 0.2)
    assert parse_record(Recorded, {"threshold": 0.3}, {"threshold": "p"}).threshold == 0.5


def test_a_record_holds_the_knobs_closed_bounds_and_names_the_bad_key() -> None:
    assert parse_record(Recorded, {"threshold": 0}).threshold == 0  # a job refuses 0
    assert parse_record(Recorded, {"threshold": 1}).threshold == 1
    for record, pointer, message in (
        ({"threshold": 1.01}, "/threshold", "must be at most 1, got 1.01"),
        ({"p": "0.5"}, "/p", 'must be a number, got "0.5"'),
        ({"deadband": -1}, "/deadband", "must be at least 0, got -1"),
    ):
        with pytest.raises(InvalidJob) as caught:
            parse_record(Recorded, record, {"threshold": "p"} if "p" in record else None)
        assert (caught.value.pointer, caught.value.message) == (pointer, f"{pointer}: {message}")
    with pytest.raises(TypeError, match="composite"):
        parse_record(Both, {})
