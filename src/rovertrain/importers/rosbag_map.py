"""Which topics of a ROS bag are the camera and the commands, and what values they become.

A map is a small JSON document (`--map FILE`, docs/importing.md "The map file"):

    {"image": "/camera/image_raw/compressed",
     "commands": [
       {"topic": "/cmd_vel_joy", "by": "human"},
       {"topic": "/cmd_vel_nav", "by": "policy"},
       {"topic": "/drive", "values": {"speed": {"field": "drive.speed", "scale": 0.25},
                                      "turn": "drive.steering_angle"}, "motion": ["speed"]}],
     "splitGapSeconds": 10, "muxTimeoutMs": 500, "silenceMs": 500}

A value names a message field by its dotted path (`linear.x`, `axes.1`), optionally scaled
(then clipped to [-1, 1]). Without `values` a topic gets its message type's defaults
(`DEFAULT_VALUES`: the units of the common teleop nodes). The order of `commands` is the
mux's priority, as in a `twist_mux` configuration: a topic's message is dropped while an
earlier topic sent one within `muxTimeoutMs`. Everything left out is detected from the bag
(`choose_image`, `choose_commands`). Pure; a bad map raises `RovertrainError("usage")`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rovertrain.contracts.command_schema import HUMAN, SENDERS
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.data.recording import MAX_NAME_CHARS, MAX_VALUES

IMAGE = "sensor_msgs/Image"
COMPRESSED = "sensor_msgs/CompressedImage"
IMAGE_TYPES = (IMAGE, COMPRESSED)
TWIST = "geometry_msgs/Twist"
TWIST_STAMPED = "geometry_msgs/TwistStamped"
ACKERMANN = "ackermann_msgs/AckermannDrive"
ACKERMANN_STAMPED = "ackermann_msgs/AckermannDriveStamped"
JOY = "sensor_msgs/Joy"
TRANSPORT_SUFFIXES = ("/compressed", "/theora", "/zstd", "/ffmpeg")
"""image_transport's sub-topics: the same pictures as the topic they hang off."""


@dataclass(frozen=True)
class ValueField:
    path: tuple[str, ...]
    """Attribute names and, for arrays, indexes (`("axes", "1")`)."""
    scale: float = 1.0


@dataclass(frozen=True)
class TypeDefaults:
    values: Mapping[str, ValueField]
    motion: tuple[str, ...]


def _field(path: str, scale: float = 1.0) -> ValueField:
    return ValueField(tuple(path.split(".")), scale)


DEFAULT_VALUES: Mapping[str, TypeDefaults] = {
    # teleop_twist_keyboard's default speed (0.5 m/s) and turn (1.0 rad/s) send 1.0
    TWIST: TypeDefaults({"speed": _field("linear.x", 2.0), "turn": _field("angular.z")}, ()),
    TWIST_STAMPED: TypeDefaults(
        {"speed": _field("twist.linear.x", 2.0), "turn": _field("twist.angular.z")}, ()
    ),
    # an Ackermann car at 1 m/s and 0.4 rad of steering (about F1TENTH's limit) sends 1.0;
    # steering a parked car does not move it
    ACKERMANN: TypeDefaults(
        {"speed": _field("speed"), "turn": _field("steering_angle", 2.5)}, ("speed",)
    ),
    ACKERMANN_STAMPED: TypeDefaults(
        {"speed": _field("drive.speed"), "turn": _field("drive.steering_angle", 2.5)}, ("speed",)
    ),
    # teleop_twist_joy's default axes: the left stick, forward (axis 1) and sideways (axis 0)
    JOY: TypeDefaults({"speed": _field("axes.1"), "turn": _field("axes.0")}, ()),
}
COMMAND_PREFERENCE = (
    (TWIST, TWIST_STAMPED, ACKERMANN, ACKERMANN_STAMPED),
    (JOY,),
)
"""Detection's order: a command topic (what the rover executed) before a joystick's axes."""


@dataclass(frozen=True)
class CommandTopic:
    topic: str
    by: str = HUMAN
    values: Mapping[str, ValueField] | None = None
    """None: the message type's DEFAULT_VALUES."""
    motion: tuple[str, ...] | None = None
    """The values whose return to zero is a `stop` (None: the type's default, or all)."""
    enable_button: int | None = None
    """Joy only: the dead-man button; released, the axes count as zero."""


@dataclass(frozen=True)
class BagMap:
    image: str | None = None
    commands: tuple[CommandTopic, ...] = ()
    split_gap_s: float = 10.0
    """A pause this long in the camera or the commands ends one session and starts the next."""
    mux_timeout_ms: float = 500.0
    silence_ms: float = 500.0
    """A command stream silent this long while moving has stopped the rover (a base
    controller's command timeout, diff_drive_controller's 0.5 s)."""


def normal_type(msgtype: str) -> str:
    """`geometry_msgs/msg/Twist` (ROS 2, rosbags) and `geometry_msgs/Twist` (ROS 1) alike."""
    return msgtype.replace("/msg/", "/")


def _usage(pointer: str, message: str) -> RovertrainError:
    return RovertrainError(ErrorCode.USAGE, f"map {pointer}: {message}")


def _number(pointer: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _usage(pointer, f"must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def _topic_name(pointer: str, value: object) -> str:
    if not isinstance(value, str) or not value.startswith("/") or len(value) > 256:
        raise _usage(pointer, f"must be a topic name starting with '/', got {value!r}")
    return value


def _value_field(pointer: str, spec: object) -> ValueField:
    scale: object = 1.0
    if isinstance(spec, dict):
        unknown = set(spec) - {"field", "scale"}
        if unknown:
            raise _usage(pointer, f"unknown key {sorted(unknown)[0]!r} (field, scale)")
        scale = spec.get("scale", 1.0)
        spec = spec.get("field")
    if not isinstance(spec, str) or not spec or any(not part for part in spec.split(".")):
        raise _usage(pointer, f"must be a field path like 'linear.x' or {{field, scale}}: {spec!r}")
    factor = _number(f"{pointer}/scale", scale, -1e6, 1e6)
    if factor == 0:
        raise _usage(f"{pointer}/scale", "must not be 0")
    return ValueField(tuple(spec.split(".")), factor)


def _command_topic(pointer: str, entry: object) -> CommandTopic:
    if not isinstance(entry, dict):
        raise _usage(pointer, "must be an object with a topic")
    unknown = set(entry) - {"topic", "by", "values", "motion", "enableButton"}
    if unknown:
        raise _usage(
            pointer, f"unknown key {sorted(unknown)[0]!r} (topic, by, values, motion, enableButton)"
        )
    topic = _topic_name(f"{pointer}/topic", entry.get("topic"))
    by = entry.get("by", HUMAN)
    if by not in SENDERS:
        raise _usage(f"{pointer}/by", f"must be one of {', '.join(SENDERS)}, got {by!r}")
    values: dict[str, ValueField] | None = None
    if "values" in entry:
        raw = entry["values"]
        if not isinstance(raw, dict) or not 1 <= len(raw) <= MAX_VALUES:
            raise _usage(f"{pointer}/values", f"must be an object of 1 to {MAX_VALUES} values")
        values = {}
        for name, spec in raw.items():
            if not 1 <= len(name) <= MAX_NAME_CHARS:
                raise _usage(f"{pointer}/values", f"value names have 1 to {MAX_NAME_CHARS} chars")
            values[name] = _value_field(f"{pointer}/values/{name}", spec)
    motion = entry.get("motion")
    if motion is not None and (
        not isinstance(motion, list)
        or not motion
        or not all(isinstance(name, str) for name in motion)
        or (values is not None and not all(name in values for name in motion))
    ):
        raise _usage(f"{pointer}/motion", f"must list some of the values, got {motion!r}")
    button = entry.get("enableButton")
    if button is not None and (
        isinstance(button, bool) or not isinstance(button, int) or not 0 <= button < 256
    ):
        raise _usage(f"{pointer}/enableButton", f"must be a button index, got {button!r}")
    return CommandTopic(topic, by, values, None if motion is None else tuple(motion), button)


def parse_map(document: object) -> BagMap:
    """The map `document` (parsed JSON) describes."""
    if not isinstance(document, dict):
        raise _usage("/", "must be a JSON object")
    keys = {"image", "commands", "splitGapSeconds", "muxTimeoutMs", "silenceMs"}
    unknown = set(document) - keys
    if unknown:
        raise _usage("/", f"unknown key {sorted(unknown)[0]!r} ({', '.join(sorted(keys))})")
    image = document.get("image")
    commands = document.get("commands", [])
    if not isinstance(commands, list) or len(commands) > 16:
        raise _usage("/commands", "must be a list of at most 16 topics")
    topics = tuple(_command_topic(f"/commands/{n}", entry) for n, entry in enumerate(commands))
    if len({topic.topic for topic in topics}) != len(topics):
        raise _usage("/commands", "names a topic twice")
    defaults = BagMap()
    return BagMap(
        image=None if image is None else _topic_name("/image", image),
        commands=topics,
        split_gap_s=_number("/splitGapSeconds", document.get("splitGapSeconds", 10.0), 0.5, 1e6),
        mux_timeout_ms=_number("/muxTimeoutMs", document.get("muxTimeoutMs", 500.0), 0, 60_000),
        silence_ms=_number("/silenceMs", document.get("silenceMs", defaults.silence_ms), 1, 60_000),
    )


def with_topics(bag_map: BagMap, image: str | None, commands: Sequence[str]) -> BagMap:
    """The map with `--image-topic` and `--command-topic` applied: named command topics are
    a person's and replace the map's list."""
    if image is not None:
        bag_map = replace(bag_map, image=_topic_name("--image-topic", image))
    if commands:
        topics = tuple(CommandTopic(_topic_name("--command-topic", name)) for name in commands)
        bag_map = replace(bag_map, commands=topics)
    return bag_map


@dataclass(frozen=True)
class Topic:
    """A topic as the bag lists it."""

    name: str
    msgtype: str
    """Normalised (`normal_type`)."""
    messages: int


def _base(topic: str) -> str:
    for suffix in TRANSPORT_SUFFIXES:
        if topic.endswith(suffix):
            return topic[: -len(suffix)]
    return topic


def choose_image(topics: Sequence[Topic]) -> tuple[str | None, str]:
    """(the camera topic, "") or (None, why none could be chosen). One image topic is it;
    several that are one camera's transports (`/cam/image_raw`, `/cam/image_raw/compressed`)
    give the raw one; a depth camera's never."""
    found = [
        topic
        for topic in topics
        if topic.msgtype in IMAGE_TYPES and topic.messages and "depth" not in topic.name.lower()
    ]
    if not found:
        return None, "no image topic (sensor_msgs/Image or CompressedImage)"
    names = sorted(topic.name for topic in found)
    bases = {_base(name) for name in names}
    if len(bases) > 1:
        return None, f"several image topics ({', '.join(names)}): name one with --image-topic"
    (base,) = bases
    return (base if base in names else names[0]), ""


def choose_commands(topics: Sequence[Topic]) -> tuple[tuple[CommandTopic, ...], str]:
    """(the command topics detected, a person's, "") or ((), why none could be chosen): the
    one topic of the first kind in COMMAND_PREFERENCE that the bag holds."""
    for kinds in COMMAND_PREFERENCE:
        found = sorted(topic.name for topic in topics if topic.msgtype in kinds and topic.messages)
        if len(found) == 1:
            return (CommandTopic(found[0]),), ""
        if len(found) > 1:
            return (), (
                f"several command topics ({', '.join(found)}): name the person's with "
                "--command-topic, or a map file for a mux"
            )
    return (
        (),
        "no command topic (geometry_msgs/Twist or TwistStamped, ackermann_msgs, sensor_msgs/Joy)",
    )


class MissingField(ValueError):
    """A map's field path that the message does not have."""


def field_value(message: object, path: Sequence[str]) -> float:
    """The number at `path` in a deserialised message (attributes, and indexes into arrays:
    `axes.1`); MissingField when it is not there or not a number."""
    node: object = message
    for part in path:
        if part.isdigit():
            try:
                node = node[int(part)]  # type: ignore[index]
            except (IndexError, TypeError, KeyError):
                raise MissingField(".".join(path)) from None
        elif hasattr(node, part):
            node = getattr(node, part)
        else:
            raise MissingField(".".join(path))
    try:
        return float(node)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise MissingField(".".join(path)) from None


def message_values(
    message: object, values: Mapping[str, ValueField], enable_button: int | None = None
) -> dict[str, float]:
    """A command message's values, scaled (clipped later, by the command rules); all zero
    while a Joy's dead-man button is released."""
    if enable_button is not None:
        try:
            pressed = field_value(message, ("buttons", str(enable_button))) != 0
        except MissingField:
            pressed = False
        if not pressed:
            return dict.fromkeys(values, 0.0)
    return {name: field_value(message, f.path) * f.scale for name, f in values.items()}
