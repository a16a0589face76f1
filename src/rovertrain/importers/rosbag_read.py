"""Reading a ROS bag with `rosbags`: which file or folder it is, its topics, which of them
are the camera and the commands (`rosbag_map`), and a survey of every such message's times
and values (no picture decoded). What the library raises on a damaged or foreign bag becomes
a `SkipSession` with its words.
"""

from __future__ import annotations

import functools
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rovertrain.contracts.errors import SkipSession
from rovertrain.importers.commands import Dropped
from rovertrain.importers.rosbag_map import (
    DEFAULT_VALUES,
    IMAGE_TYPES,
    BagMap,
    CommandTopic,
    MissingField,
    Topic,
    ValueField,
    choose_commands,
    choose_image,
    message_values,
    normal_type,
)
from rovertrain.importers.rosbag_plan import Stamped

if TYPE_CHECKING:
    from rosbags.highlevel import AnyReader
    from rosbags.interfaces import Connection

ACKERMANN_DEFINITIONS = {
    # ackermann_msgs is not in rosbags' type stores; ROS 1 bags and recent ROS 2 bags carry
    # the definitions themselves, older ROS 2 bags need these (ackermann_msgs 2.0)
    "ackermann_msgs/msg/AckermannDrive": "float32 steering_angle\nfloat32 "
    "steering_angle_velocity\nfloat32 speed\nfloat32 acceleration\nfloat32 jerk\n",
    "ackermann_msgs/msg/AckermannDriveStamped": "std_msgs/Header header\n"
    "ackermann_msgs/AckermannDrive drive\n",
}


def bag_errors() -> tuple[type[BaseException], ...]:
    """What the bag library raises on a damaged, truncated or foreign file."""
    from rosbags.highlevel import AnyReaderError
    from rosbags.rosbag1 import ReaderError as Reader1Error
    from rosbags.rosbag2 import ReaderError as Reader2Error
    from rosbags.serde import SerdeError
    from rosbags.typesys import TypesysError

    return (
        AnyReaderError,
        Reader1Error,
        Reader2Error,
        SerdeError,
        TypesysError,
        sqlite3.Error,
        struct.error,
        EOFError,
        ValueError,
        KeyError,
        IndexError,
        OSError,
    )


@functools.cache
def _typestore() -> Any:
    """Every bag's fallback definitions: the current ROS 2 release's, with ackermann_msgs
    (built once: reading the store's sources is the slow part)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.LATEST)
    types: dict[str, Any] = {}
    for name, text in ACKERMANN_DEFINITIONS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def bag_paths(bag: Path) -> tuple[list[Path], str]:
    """What AnyReader opens for `bag`, and its storage: a ROS 1 `.bag` file, or a ROS 2 bag's
    folder (named directly or by one of its `.db3`/`.mcap` files)."""
    if (
        bag.is_file()
        and bag.suffix in (".db3", ".mcap")
        and (bag.parent / "metadata.yaml").exists()
    ):
        bag = bag.parent
    if bag.is_dir():
        if not (bag / "metadata.yaml").is_file():
            raise SkipSession(
                "invalid_recording", f"{bag} is a folder without metadata.yaml (not a ROS 2 bag)"
            )
        storage = "mcap" if any(bag.glob("*.mcap")) else "sqlite3"
        return [bag], storage
    if not bag.exists():
        raise SkipSession("missing_recording", f"no bag {bag}")
    with bag.open("rb") as stream:
        head = stream.read(13)
    if head != b"#ROSBAG V2.0\n":
        kind = (
            "a ROS 2 bag file without its metadata.yaml" if bag.suffix in (".db3", ".mcap") else ""
        )
        raise SkipSession(
            "invalid_recording",
            f"{bag.name} is not a ROS 1 bag (v2.0)" + (f": {kind}" if kind else ""),
        )
    return [bag], "rosbag1"


@contextmanager
def open_bag(paths: list[Path]) -> Iterator[AnyReader]:
    from rosbags.highlevel import AnyReader

    reader = AnyReader(paths, default_typestore=_typestore())
    try:
        reader.open()
    except bag_errors() as error:
        raise SkipSession("invalid_recording", f"cannot open the bag: {words(error)}") from None
    try:
        yield reader
    finally:
        reader.close()


def topic_connections(reader: AnyReader, topic: str) -> list[Connection]:
    """The bag's connections of `topic` (several where the recorder saw several publishers)."""
    return [connection for connection in reader.connections if connection.topic == topic]


def words(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def listed_topics(reader: AnyReader) -> list[Topic]:
    return [
        Topic(name, normal_type(info.msgtype or ""), info.msgcount)
        for name, info in sorted(reader.topics.items())
    ]


def topic_rows(topics: Sequence[Topic], duration_ns: int) -> list[dict[str, object]]:
    """The bag's topics for the `imported` event and `--dry-run`: name, type, messages, hz."""
    seconds = max(duration_ns / 1e9, 1e-9)
    return [
        {
            "name": topic.name,
            "type": topic.msgtype,
            "messages": topic.messages,
            "hz": round(topic.messages / seconds, 2) if topic.messages > 1 else None,
        }
        for topic in topics
    ]


def _topics_words(topics: Sequence[Topic]) -> str:
    shown = ", ".join(f"{t.name} ({t.msgtype}, {t.messages})" for t in topics[:12])
    return shown + (f" and {len(topics) - 12} more" if len(topics) > 12 else "")


@dataclass(frozen=True)
class Resolved:
    image: Topic
    commands: tuple[tuple[CommandTopic, Topic, dict[str, ValueField]], ...]


def resolve(bag_map: BagMap, topics: Sequence[Topic]) -> Resolved:
    """The topics to read and each command topic's value fields; SkipSession saying why the
    bag cannot be used (the bag's topics listed)."""
    by_name = {topic.name: topic for topic in topics}
    listing = f"; the bag has {_topics_words(topics)}" if topics else "; the bag has no topic"
    image_name, why = (bag_map.image, "") if bag_map.image else choose_image(topics)
    if image_name is None:
        raise SkipSession("no_video", why + listing)
    image = by_name.get(image_name)
    if image is None or image.msgtype not in IMAGE_TYPES:
        found = "no such topic" if image is None else image.msgtype
        raise SkipSession("no_video", f"image topic {image_name}: {found}{listing}")
    chosen, why = (bag_map.commands, "") if bag_map.commands else choose_commands(topics)
    if not chosen:
        raise SkipSession("invalid_recording", why + listing)
    commands = []
    for entry in chosen:
        topic = by_name.get(entry.topic)
        if topic is None:
            raise SkipSession(
                "invalid_recording", f"command topic {entry.topic}: no such topic{listing}"
            )
        defaults = DEFAULT_VALUES.get(topic.msgtype)
        values = entry.values if entry.values is not None else (defaults and defaults.values)
        if not values:
            raise SkipSession(
                "invalid_recording",
                f"command topic {entry.topic} is a {topic.msgtype}, which has no default values: "
                "give its values in a map file (docs/importing.md)",
            )
        commands.append((entry, topic, dict(values)))
    return Resolved(image, tuple(commands))


def _stamp_ns(message: object) -> int:
    header = getattr(message, "header", None)
    stamp = getattr(header, "stamp", None)
    if stamp is None:
        return 0
    return int(getattr(stamp, "sec", 0)) * 1_000_000_000 + int(getattr(stamp, "nanosec", 0))


@dataclass
class Survey:
    frames: list[Stamped] = field(default_factory=list)
    """Every camera message, in arrival order (the order the second reading meets them)."""
    unreadable: set[int] = field(default_factory=set)
    """The camera messages (indexes into `frames`) whose definition cannot read them."""
    commands: list[list[tuple[Stamped, dict[str, float]]]] = field(default_factory=list)
    dropped: Dropped = field(default_factory=Dropped)


def survey(reader: AnyReader, resolved: Resolved) -> Survey:
    """Every camera message's times and every command message's times and values."""
    found = Survey(commands=[[] for _ in resolved.commands])
    slots = {entry.topic: number for number, (entry, _, _) in enumerate(resolved.commands)}
    wanted = topic_connections(reader, resolved.image.name)
    for name in slots:
        wanted += topic_connections(reader, name)
    for connection, receive_ns, raw in reader.messages(connections=wanted):
        camera = connection.topic == resolved.image.name
        try:
            message = reader.deserialize(raw, connection.msgtype)
        except bag_errors():
            found.dropped.add("undecodable_message")
            if camera:  # keeps its place: the second reading counts messages
                found.unreadable.add(len(found.frames))
                found.frames.append(Stamped(receive_ns))
            continue
        stamped = Stamped(receive_ns, _stamp_ns(message))
        if camera:
            found.frames.append(stamped)
            continue
        number = slots[connection.topic]
        entry, topic, values = resolved.commands[number]
        try:
            read = message_values(message, values, entry.enable_button)
        except MissingField as error:
            raise SkipSession(
                "invalid_recording", f"{topic.name} ({topic.msgtype}) has no field {error}"
            ) from None
        if all(np.isfinite(value) for value in read.values()):
            found.commands[number].append((stamped, read))
        else:
            found.dropped.add("invalid_command")
    return found
