"""Donkeycar tubs driven by the synthetic world's driver (rovertrain.sim.synth).

The driver's controls at each camera frame become the record's `user/angle` (its turn) and
`user/throttle` (its speed), at 20 Hz like Donkeycar's drive loop; frames are JPEGs."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from importers.tubs import Row, jpeg, write_tub
from rovertrain.data.partition import is_held_out
from rovertrain.importers.identity import derive_session_id
from rovertrain.sim.synth import DEFAULT_WORLD, PROFILES, simulate_session
from rovertrain.sim.worlds import build

HZ = 20
START_MS = 1_764_500_000_000


def synth_tub(tub: Path, seed: int, index: int, minutes: float, created_at: float) -> Path:
    rng = random.Random(f"{seed}:tub{index}")
    scenario = build(DEFAULT_WORLD, rng, PROFILES[index % 2], rng.randrange(2**32))
    rows: list[Row] = []
    images: list[bytes] = []
    session = f"26-11-30_{index}"

    def on_frame(image: np.ndarray) -> None:
        t = len(rows) * 1000 / HZ
        pose = scenario.world.pose  # the controls the driver holds at this frame
        images.append(jpeg(image))
        rows.append(Row(START_MS + round(t), pose.turn, pose.speed, session=session))

    simulate_session(scenario, minutes * 60, 0.0, HZ, on_frame)
    return write_tub(tub, rows, created_at=created_at, image_for=images.__getitem__)


def tub_session_id(index: int, created_at: float) -> str:
    """The id `rovertrain import donkey` gives the tub's one session (to choose hold-outs)."""
    session = f"26-11-30_{index}"
    return derive_session_id("donkey", session, [created_at, session, 0, float(START_MS)])


def synth_tubs(
    folder: Path, count: int, minutes: float, held_out: int, seed: int = 7
) -> list[Path]:
    """`count` tubs of which `held_out` import as held-out sessions (creation times chosen)."""
    tubs = []
    held = 0
    for index in range(count):
        want_held = held < held_out and index >= count - held_out
        created_at = 1_764_500_000.0 + index
        while is_held_out(tub_session_id(index, created_at)) != want_held:
            created_at += 0.001
        held += want_held
        tubs.append(synth_tub(folder / f"tub_{index}", seed, index, minutes, created_at))
    return tubs
