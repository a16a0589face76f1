"""Real ROS bags for the tests, written with `rosbags` and the message definitions of ROS 1
Noetic and ROS 2 Humble: ROS 1 `.bag`, ROS 2 SQLite and MCAP; raw and compressed images;
Twist, TwistStamped, AckermannDriveStamped and Joy commands."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from rovertrain.importers.rosbag_read import ACKERMANN_DEFINITIONS

NS = 1_000_000_000
START_NS = 1_764_500_000 * NS
STORAGES = ("rosbag1", "sqlite3", "mcap")


def typestore(storage: str) -> Any:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if storage == "rosbag1" else Stores.ROS2_HUMBLE)
    types: dict[str, Any] = {}
    for name, text in ACKERMANN_DEFINITIONS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


@dataclass
class Msg:
    """One message to write: its topic, type, receive time and a builder given the store."""

    topic: str
    msgtype: str
    receive_ns: int
    build: Callable[[Any], object]


def header(store: Any, stamp_ns: int) -> object:
    time = store.types["builtin_interfaces/msg/Time"](sec=stamp_ns // NS, nanosec=stamp_ns % NS)
    fields = store.types["std_msgs/msg/Header"].__dataclass_fields__
    extra = {"seq": 0} if "seq" in fields else {}
    return store.types["std_msgs/msg/Header"](**extra, stamp=time, frame_id="camera")


def picture(number: int, width: int = 64, height: int = 48) -> np.ndarray:
    """rgb [H, W, 3]: a gradient that scrolls, different at every frame."""
    x = (np.arange(width)[None, :] * 4 + number * 3) % 256
    y = np.arange(height)[:, None] * 5 % 256
    rgb = np.zeros((height, width, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = x, y, (x + y) % 256
    return rgb


def jpeg(rgb: np.ndarray) -> bytes:
    encoder = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = rgb.shape[1], rgb.shape[0], "yuvj420p"
    encoder.time_base = Fraction(1, 30)
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuvj420p")
    return b"".join(bytes(packet) for packet in encoder.encode(frame))


def png(rgb: np.ndarray) -> bytes:
    encoder = av.CodecContext.create("png", "w")
    encoder.width, encoder.height, encoder.pix_fmt = rgb.shape[1], rgb.shape[0], "rgb24"
    encoder.time_base = Fraction(1, 30)
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
    return b"".join(bytes(packet) for packet in encoder.encode(frame))


def raw_bytes(rgb: np.ndarray, encoding: str) -> tuple[np.ndarray, int]:
    """(data, step) of `rgb` in a ROS encoding, rows padded by 4 bytes (a real `step`)."""
    height, width = rgb.shape[:2]
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[..., ::-1]
    elif encoding == "rgba8":
        pixels = np.concatenate([rgb, np.full((height, width, 1), 255, np.uint8)], axis=2)
    elif encoding == "mono8":
        pixels = rgb.mean(axis=2).astype(np.uint8)[..., None]
    else:
        raise ValueError(encoding)
    rows = pixels.reshape(height, -1)
    padded = np.zeros((height, rows.shape[1] + 4), np.uint8)
    padded[:, : rows.shape[1]] = rows
    return padded.reshape(-1), padded.shape[1]


def image(topic: str, receive_ns: int, stamp_ns: int, rgb: np.ndarray, encoding: str) -> Msg:
    data, step = raw_bytes(rgb, encoding)

    def build(store: Any) -> object:
        return store.types["sensor_msgs/msg/Image"](
            header=header(store, stamp_ns),
            height=rgb.shape[0],
            width=rgb.shape[1],
            encoding=encoding,
            is_bigendian=0,
            step=step,
            data=data,
        )

    return Msg(topic, "sensor_msgs/msg/Image", receive_ns, build)


def compressed(topic: str, receive_ns: int, stamp_ns: int, data: bytes, fmt: str) -> Msg:
    array = np.frombuffer(data, np.uint8)

    def build(store: Any) -> object:
        return store.types["sensor_msgs/msg/CompressedImage"](
            header=header(store, stamp_ns), format=fmt, data=array
        )

    return Msg(topic, "sensor_msgs/msg/CompressedImage", receive_ns, build)


def _vector(store: Any, x: float = 0.0, z: float = 0.0) -> object:
    return store.types["geometry_msgs/msg/Vector3"](x=x, y=0.0, z=z)


def twist(topic: str, receive_ns: int, linear: float, angular: float) -> Msg:
    def build(store: Any) -> object:
        return store.types["geometry_msgs/msg/Twist"](
            linear=_vector(store, x=linear), angular=_vector(store, z=angular)
        )

    return Msg(topic, "geometry_msgs/msg/Twist", receive_ns, build)


def twist_stamped(topic: str, receive_ns: int, stamp_ns: int, linear: float, angular: float) -> Msg:
    def build(store: Any) -> object:
        inner = store.types["geometry_msgs/msg/Twist"](
            linear=_vector(store, x=linear), angular=_vector(store, z=angular)
        )
        return store.types["geometry_msgs/msg/TwistStamped"](
            header=header(store, stamp_ns), twist=inner
        )

    return Msg(topic, "geometry_msgs/msg/TwistStamped", receive_ns, build)


def ackermann(topic: str, receive_ns: int, stamp_ns: int, speed: float, steering: float) -> Msg:
    def build(store: Any) -> object:
        drive = store.types["ackermann_msgs/msg/AckermannDrive"](
            steering_angle=steering,
            steering_angle_velocity=0.0,
            speed=speed,
            acceleration=0.0,
            jerk=0.0,
        )
        return store.types["ackermann_msgs/msg/AckermannDriveStamped"](
            header=header(store, stamp_ns), drive=drive
        )

    return Msg(topic, "ackermann_msgs/msg/AckermannDriveStamped", receive_ns, build)


def joy(
    topic: str, receive_ns: int, stamp_ns: int, axes: Sequence[float], buttons: Sequence[int]
) -> Msg:
    def build(store: Any) -> object:
        return store.types["sensor_msgs/msg/Joy"](
            header=header(store, stamp_ns),
            axes=np.asarray(axes, np.float32),
            buttons=np.asarray(buttons, np.int32),
        )

    return Msg(topic, "sensor_msgs/msg/Joy", receive_ns, build)


def write_bag(path: Path, storage: str, messages: Iterable[Msg], compress: bool = False) -> Path:
    """`path` (a `.bag` file for rosbag1, a bag folder for ROS 2) holding `messages`;
    `compress`: lz4 chunks (ROS 1) or zstd files (ROS 2), as `record --compression` does."""
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2
    from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

    store = typestore(storage)
    items = sorted(messages, key=lambda message: message.receive_ns)
    if storage == "rosbag1":
        writer: Any = Writer1(path)
    else:
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        writer = Writer2(path, version=9, storage_plugin=plugin)
    if compress and storage == "rosbag1":
        writer.set_compression(Writer1.CompressionFormat.LZ4)
    elif compress:
        writer.set_compression(CompressionMode.FILE, CompressionFormat.ZSTD)
    connections: dict[str, Any] = {}
    with writer:
        for message in items:
            if message.topic not in connections:
                connections[message.topic] = writer.add_connection(
                    message.topic, message.msgtype, typestore=store
                )
            built = message.build(store)
            if storage == "rosbag1":
                data = store.serialize_ros1(built, message.msgtype)
            else:
                data = store.serialize_cdr(built, message.msgtype)
            writer.write(connections[message.topic], message.receive_ns, data)
    return path


def drive(
    seconds: float = 4.0,
    camera_hz: float = 30.0,
    command_hz: float = 20.0,
    image_topic: str = "/camera/image_raw/compressed",
    kind: str = "jpeg",
    command: str = "twist",
    latency_ns: int = 20_000_000,
    start_ns: int = START_NS,
) -> list[Msg]:
    """A drive: the camera at `camera_hz` (stamped at capture, received `latency_ns` later)
    and a person's commands at `command_hz`: forward at 0.25 m/s, turning after the first
    second, stopping (zeros) for the last second."""
    messages = []
    for number in range(int(seconds * camera_hz)):
        stamp = start_ns + round(number * NS / camera_hz)
        rgb = picture(number)
        receive = stamp + latency_ns
        if kind == "jpeg":
            messages.append(compressed(image_topic, receive, stamp, jpeg(rgb), "jpeg"))
        elif kind == "png":
            messages.append(compressed(image_topic, receive, stamp, png(rgb), "png"))
        else:
            messages.append(image(image_topic, receive, stamp, rgb, kind))
    for number in range(int(seconds * command_hz)):
        t = start_ns + round(number * NS / command_hz)
        moving = t < start_ns + (seconds - 1) * NS
        speed = 0.25 if moving else 0.0
        turn = 0.5 if moving and t >= start_ns + NS else 0.0
        messages.append(command_message(command, t, speed, turn))
    return messages


def command_message(command: str, t: int, speed: float, turn: float) -> Msg:
    """The command types' messages for a wish of speed (m/s) and turn (rad/s or rad)."""
    if command == "twist":
        return twist("/cmd_vel", t, speed, turn)
    if command == "twist_stamped":
        return twist_stamped("/cmd_vel", t, t, speed, turn)
    if command == "ackermann":
        return ackermann("/drive", t, t, speed, turn)
    if command == "joy":  # teleop_twist_joy's left stick: axis 1 forward, axis 0 sideways
        return joy("/joy", t, t, [turn, speed * 2, 0.0], [1, 0])
    raise ValueError(command)
