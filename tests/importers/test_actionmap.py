"""LeRobot action maps and episode selections (pure)."""

from __future__ import annotations

import pytest

from rovertrain.contracts.errors import RovertrainError
from rovertrain.importers.actionmap import DEFAULT_MAP, parse_action_map, parse_episodes

NAMES = ["x.vel", "y.vel", "theta.vel"]


def test_the_default_map_is_linear_and_angular() -> None:
    mapping = parse_action_map(DEFAULT_MAP, NAMES, 3)
    assert mapping.command == "drive"
    assert mapping.apply([0.4, 0.9, -0.2]) == {"speed": 0.4, "turn": -0.2 * 0 + 0.9}
    assert mapping.motion == ("speed", "turn")


def test_values_by_name_index_and_scale() -> None:
    document = {"command": "move", "values": {"speed": "x.vel", "turn": {"name": "theta.vel",
                "scale": 0.5}, "strafe": {"index": 1}}, "motion": ["speed"]}  # fmt: skip
    mapping = parse_action_map(document, NAMES, 3)
    assert mapping.apply([0.4, 0.9, -0.2]) == {"speed": 0.4, "turn": -0.1, "strafe": 0.9}
    assert mapping.command == "move" and mapping.motion == ("speed",)


@pytest.mark.parametrize(
    ("document", "pointer"),
    [
        ([], "/"),
        ({"values": {}}, "/values"),
        ({"values": {"speed": 3}}, "/values/speed"),
        ({"values": {"speed": "z.vel"}}, "/values/speed"),
        ({"values": {"speed": {"index": 0, "scale": 0}}}, "/values/speed/scale"),
        ({"values": {"speed": {"idx": 0}}}, "/values/speed"),
        ({"values": {"speed": 0}, "motion": ["turn"]}, "/motion"),
        ({"values": {"speed": 0}, "command": ""}, "/command"),
        ({"values": {"speed": 0}, "extra": 1}, "/"),
    ],
)
def test_a_bad_map_is_a_usage_error_naming_the_field(document: object, pointer: str) -> None:
    with pytest.raises(RovertrainError) as caught:
        parse_action_map(document, NAMES, 3)
    assert caught.value.code == "usage"
    assert f"action map {pointer}:" in caught.value.message


def test_episode_selections() -> None:
    assert parse_episodes("0,2,5-7") == {0, 2, 5, 6, 7}
    assert parse_episodes(" 3 ") == {3}
    for bad in ("", "a", "-1", "5-3", "1-", "0-99999999"):
        with pytest.raises(RovertrainError) as caught:
            parse_episodes(bad)
        assert caught.value.code == "usage" and "--episodes" in caught.value.message
