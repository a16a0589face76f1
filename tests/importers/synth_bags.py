"""ROS 2 bags (MCAP) of drives by the synthetic world's driver: the camera as JPEG
`CompressedImage`s at 30 fps stamped at capture, and `cmd_vel` Twists at 20 Hz holding the
driver's controls (speed at teleop_twist_keyboard's 0.5 m/s scale, turn in rad/s), as a ROS
teleop setup records them."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from importers.rosbags_data import NS, Msg, compressed, jpeg, twist, write_bag
from rovertrain.data.partition import is_held_out
from rovertrain.importers.rosbag import session_id
from rovertrain.sim.synth import DEFAULT_WORLD, PROFILES, simulate_session
from rovertrain.sim.worlds import build

CAMERA_HZ, COMMAND_HZ = 30, 20
IMAGE_TOPIC = "/camera/image_raw/compressed"
LATENCY_NS = 15_000_000


def synth_bag(path: Path, seed: int, index: int, minutes: float, start_ns: int) -> int:
    """Write one drive's bag at `path`; its frame count."""
    rng = random.Random(f"{seed}:bag{index}")
    scenario = build(DEFAULT_WORLD, rng, PROFILES[index % 2], rng.randrange(2**32))
    messages: list[Msg] = []
    frames = 0
    next_command = 0

    def on_frame(image: np.ndarray) -> None:
        nonlocal frames, next_command
        stamp = start_ns + round(frames * NS / CAMERA_HZ)
        messages.append(compressed(IMAGE_TOPIC, stamp + LATENCY_NS, stamp, jpeg(image), "jpeg"))
        frames += 1
        pose = scenario.world.pose  # the controls the driver holds now
        while start_ns + round(next_command * NS / COMMAND_HZ) <= stamp:
            t = start_ns + round(next_command * NS / COMMAND_HZ)
            messages.append(twist("/cmd_vel", t, pose.speed * 0.5, pose.turn))
            next_command += 1

    simulate_session(scenario, minutes * 60, 0.0, CAMERA_HZ, on_frame)
    write_bag(path, "mcap", messages)
    return frames


def synth_bags(
    folder: Path, count: int, minutes: float, held_out: int, seed: int = 7
) -> list[Path]:
    """`count` bags of which the last `held_out` import as held-out sessions (start times
    chosen so: the split is a hash of the session id)."""
    frames = round(minutes * 60 * CAMERA_HZ)
    bags = []
    for index in range(count):
        want_held = index >= count - held_out
        start_ns = (1_764_500_000 + index * 3600) * NS
        while (
            is_held_out(session_id(start_ns, IMAGE_TOPIC, start_ns, frames, ["/cmd_vel"]))
            != want_held
        ):
            start_ns += 1_000_000
        written = synth_bag(folder / f"drive_{index}", seed, index, minutes, start_ns)
        assert written == frames, (written, frames)
        bags.append(folder / f"drive_{index}")
    return bags
