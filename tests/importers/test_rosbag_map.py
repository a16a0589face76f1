"""The bag map: parsing, detection of the camera and command topics, reading values (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from rovertrain.contracts.errors import RovertrainError
from rovertrain.importers.rosbag_map import (
    ACKERMANN_STAMPED,
    COMPRESSED,
    IMAGE,
    JOY,
    TWIST,
    BagMap,
    CommandTopic,
    MissingField,
    Topic,
    ValueField,
    choose_commands,
    choose_image,
    field_value,
    message_values,
    normal_type,
    parse_map,
    with_topics,
)


def test_a_full_map_parses_into_its_record() -> None:
    document = {
        "image": "/front/image_raw",
        "commands": [
            {"topic": "/cmd_vel_joy", "by": "human"},
            {
                "topic": "/cmd_vel_nav",
                "by": "policy",
                "values": {"speed": {"field": "linear.x", "scale": 0.5}, "turn": "angular.z"},
                "motion": ["speed"],
            },
            {"topic": "/joy", "enableButton": 4},
        ],
        "splitGapSeconds": 5,
        "muxTimeoutMs": 250,
        "silenceMs": 1000,
    }
    parsed = parse_map(document)
    assert parsed.image == "/front/image_raw"
    assert parsed.commands[0] == CommandTopic("/cmd_vel_joy")
    assert parsed.commands[1].by == "policy"
    assert parsed.commands[1].values == {
        "speed": ValueField(("linear", "x"), 0.5),
        "turn": ValueField(("angular", "z"), 1.0),
    }
    assert parsed.commands[1].motion == ("speed",)
    assert parsed.commands[2].enable_button == 4
    assert (parsed.split_gap_s, parsed.mux_timeout_ms, parsed.silence_ms) == (5, 250, 1000)
    assert parse_map({}) == BagMap()


@pytest.mark.parametrize(
    ("document", "pointer"),
    [
        ([], "/"),
        ({"camera": "/x"}, "unknown key 'camera'"),
        ({"image": "camera"}, "/image"),
        ({"commands": {"topic": "/a"}}, "/commands"),
        ({"commands": [{"topic": "/a"}, {"topic": "/a"}]}, "twice"),
        ({"commands": [{"topic": "/a", "by": "robot"}]}, "/commands/0/by"),
        ({"commands": [{"topic": "/a", "values": {"speed": "linear..x"}}]}, "/values/speed"),
        ({"commands": [{"topic": "/a", "values": {"speed": {"field": "x", "scale": 0}}}]}, "scale"),
        ({"commands": [{"topic": "/a", "values": {"s": "x"}, "motion": ["t"]}]}, "/motion"),
        ({"commands": [{"topic": "/a", "enableButton": -1}]}, "enableButton"),
        ({"splitGapSeconds": 0}, "/splitGapSeconds"),
        ({"muxTimeoutMs": True}, "/muxTimeoutMs"),
    ],
)
def test_a_bad_map_is_a_usage_error_naming_the_field(document: object, pointer: str) -> None:
    with pytest.raises(RovertrainError) as raised:
        parse_map(document)
    assert raised.value.code == "usage"
    assert pointer in raised.value.message


def test_command_line_topics_replace_the_maps_commands() -> None:
    base = parse_map({"image": "/a/image", "commands": [{"topic": "/nav", "by": "policy"}]})
    changed = with_topics(base, "/b/image", ["/cmd_vel"])
    assert changed.image == "/b/image"
    assert changed.commands == (CommandTopic("/cmd_vel"),)
    assert with_topics(base, None, []) == base


def topics(*rows: tuple[str, str]) -> list[Topic]:
    return [Topic(name, msgtype, 10) for name, msgtype in rows]


def test_the_camera_is_detected_and_a_cameras_transports_give_the_raw_topic() -> None:
    assert choose_image(topics(("/cam/image_raw", IMAGE), ("/cmd_vel", TWIST))) == (
        "/cam/image_raw",
        "",
    )
    one_camera = topics(("/cam/image_raw", IMAGE), ("/cam/image_raw/compressed", COMPRESSED))
    assert choose_image(one_camera)[0] == "/cam/image_raw"
    only_compressed = topics(("/cam/image_raw/compressed", COMPRESSED))
    assert choose_image(only_compressed)[0] == "/cam/image_raw/compressed"
    with_depth = one_camera + topics(("/cam/depth/image_raw", IMAGE))
    assert choose_image(with_depth)[0] == "/cam/image_raw"
    two = topics(("/front/image_raw", IMAGE), ("/rear/image_raw", IMAGE))
    chosen, why = choose_image(two)
    assert chosen is None and "--image-topic" in why and "/rear/image_raw" in why
    assert choose_image(topics(("/cmd_vel", TWIST)))[0] is None


def test_the_command_topic_is_detected_and_a_command_topic_wins_over_a_joystick() -> None:
    assert choose_commands(topics(("/joy", JOY), ("/cmd_vel", TWIST)))[0] == (
        CommandTopic("/cmd_vel"),
    )
    assert choose_commands(topics(("/joy", JOY)))[0] == (CommandTopic("/joy"),)
    assert choose_commands(topics(("/drive", ACKERMANN_STAMPED)))[0] == (CommandTopic("/drive"),)
    muxed = topics(("/cmd_vel", TWIST), ("/cmd_vel_joy", TWIST), ("/cmd_vel_nav", TWIST))
    chosen, why = choose_commands(muxed)
    assert chosen == () and "--command-topic" in why and "/cmd_vel_nav" in why
    assert "no command topic" in choose_commands(topics(("/cam", IMAGE)))[1]


def test_ros1_and_ros2_type_names_are_one() -> None:
    assert normal_type("geometry_msgs/msg/Twist") == normal_type("geometry_msgs/Twist") == TWIST


@dataclass
class Vector:
    x: float = 0.0
    z: float = 0.0


@dataclass
class FakeJoy:
    axes: list[float] = field(default_factory=list)
    buttons: list[int] = field(default_factory=list)


def test_values_are_read_by_path_scaled_and_a_missing_field_is_named() -> None:
    twist: Any = type("Twist", (), {"linear": Vector(x=0.25), "angular": Vector(z=-0.5)})()
    fields = {"speed": ValueField(("linear", "x"), 2.0), "turn": ValueField(("angular", "z"))}
    assert message_values(twist, fields) == {"speed": 0.5, "turn": -0.5}
    with pytest.raises(MissingField, match=r"linear\.y"):
        field_value(twist, ("linear", "y"))
    pad = FakeJoy(axes=[0.1, 0.7], buttons=[0, 1])
    axes = {"speed": ValueField(("axes", "1")), "turn": ValueField(("axes", "0"))}
    assert message_values(pad, axes) == {"speed": 0.7, "turn": 0.1}
    with pytest.raises(MissingField):
        field_value(pad, ("axes", "5"))


def test_a_released_dead_man_button_zeroes_the_joysticks_values() -> None:
    axes = {"speed": ValueField(("axes", "1"))}
    assert message_values(FakeJoy([0.0, 0.7], [0, 1]), axes, enable_button=1) == {"speed": 0.7}
    assert message_values(FakeJoy([0.0, 0.7], [1, 0]), axes, enable_button=1) == {"speed": 0.0}
    assert message_values(FakeJoy([0.0, 0.7], [1]), axes, enable_button=1) == {"speed": 0.0}
