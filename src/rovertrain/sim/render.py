"""Camera pictures of a world: a road through grass, or a warehouse aisle between shelves.

Both project the track ahead with the same pinhole model: one row per ground depth, the
centre line displaced by the rover's offset and heading and bent by the track's curvature at
that depth (`curvature_along`).
Pure numpy; a renderer holds only its per-session texture noise and colours.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rovertrain.sim.world import World

WIDTH, HEIGHT = 320, 240
HORIZON = 84
FOCAL = 160.0


def curvature_along(world: World, depth: np.ndarray) -> np.ndarray:
    """The track's curvature at each row's depth ahead (`depth`: metres per row), as a column.

    A camera shows a bend where it is: a corner 10 m ahead bends the rows from about 10 m on,
    so a driver sees it coming, as the scripted person, who reads the curvature 3 m ahead,
    does. Sampled at the first (farthest) row of every 8 and held over them: one `curvature`
    call per 8 rows. In float64, as the road's recorded pictures were drawn; the aisle casts
    it to float32 (`AisleRenderer._centre`)."""
    pose, curvature = world.pose, world.track.curvature
    ahead = np.array([curvature(pose.s + d) for d in depth[::8]])
    return np.repeat(ahead, 8)[: len(depth)][:, None]


class RoadRenderer:
    """Sky, grass, a grey road with a dashed centre line, orange cones.

    A frame is drawn as palette indices (grass texture, road, stripe, cone, sky) and lit
    through a per-frame palette: one small table multiply instead of one per pixel."""

    GRASS_LEVELS = 36  # grass texture: -18..17 around the grass colour
    ROAD, STRIPE, CONE, SKY = 36, 37, 38, 39

    def __init__(self, rng: np.random.Generator):
        self.columns = np.arange(WIDTH, dtype=np.float32)[None, :]
        rows = np.arange(HEIGHT - HORIZON, dtype=np.float32)
        self.depth = 60.0 / (rows + 3.0)  # metres ahead for each ground row
        grass = rng.integers(-18, 18, size=(HEIGHT - HORIZON, WIDTH), dtype=np.int16)
        self.grass = (grass + 18).astype(np.uint8)
        palette = np.zeros((40, 3), dtype=np.int16)
        palette[: self.GRASS_LEVELS] = (
            np.asarray((70, 140, 60), dtype=np.int16) + np.arange(-18, 18, dtype=np.int16)[:, None]
        )
        palette[self.ROAD] = (105, 105, 110)
        palette[self.STRIPE] = (235, 235, 235)
        palette[self.CONE] = (245, 110, 20)
        palette[self.SKY] = (150, 190, 235)
        self.palette = palette.astype(np.float32)

    def frame(self, world: World) -> np.ndarray:
        pose = world.pose
        depth = self.depth[:, None]
        bend = curvature_along(world, self.depth)
        lateral = -pose.x - pose.heading * depth + 0.05 * bend * depth**2
        focal = FOCAL
        centre = WIDTH / 2 + focal * lateral / depth
        half = focal * 1.0 / depth
        index = np.empty((HEIGHT, WIDTH), dtype=np.uint8)
        index[:HORIZON] = self.SKY
        ground = index[HORIZON:]
        ground[:] = self.grass
        offset = np.abs(self.columns - centre)
        ground[offset < half] = self.ROAD
        stripe = (offset < np.maximum(1.0, half * 0.06)) & (((pose.s + depth) % 2.0) < 1.0)
        ground[stripe] = self.STRIPE
        if world.obstacle is not None:
            distance = world.obstacle.at - pose.s
            if 0.5 < distance < 40:
                row = round(60.0 / distance - 3.0)
                if 0 <= row < HEIGHT - HORIZON:
                    height = max(3, int(160.0 / distance))
                    cx = WIDTH / 2 + focal * (-pose.x - pose.heading * distance) / distance
                    top = max(0, row - height)
                    for r in range(top, row + 1):
                        w = (r - top + 1) / (row - top + 1) * height * 0.35 + 1
                        lo, hi = int(max(0, cx - w)), int(min(WIDTH, cx + w))
                        if lo < hi:
                            ground[r, lo:hi] = self.CONE
        lit = np.clip(self.palette * world.light, 0, 255).astype(np.uint8)
        image: np.ndarray = np.take(lit, index, axis=0)
        return image


class AisleRenderer:
    """A warehouse: dark ceiling with light panels, a pale floor with yellow edge lines,
    blue-and-orange racks full of boxes on both sides, brown pallets, workers in hi-vis.

    `tint` is the session's lighting colour (warm, neutral or cold light). Drawn as surface
    classes plus a fixed texture, lit through a per-frame palette like `RoadRenderer`."""

    horizon = 100
    NOISE = 20
    COLOURS = (
        (45, 45, 52),  # ceiling
        (235, 235, 220),  # light panel
        (150, 110, 70),  # boxes
        (175, 135, 90),
        (120, 90, 60),
        (60, 80, 150),
        (230, 120, 30),  # rack beam
        (80, 90, 110),  # rack foot
        (190, 185, 170),  # floor
        (240, 200, 20),  # edge line
        (200, 230, 40),  # worker's hi-vis
        (120, 75, 35),  # pallet
    )
    CEILING, PANEL, BOX, BEAM, FOOT, FLOOR, EDGE, WORKER, PALLET = 0, 1, 2, 6, 7, 8, 9, 10, 11

    def __init__(self, rng: np.random.Generator, tint: tuple[float, float, float]):
        self.tint = np.asarray(tint, dtype=np.float32)
        rows = np.arange(HEIGHT - self.horizon, dtype=np.float32)
        self.depth = (70.0 / (rows + 3.0))[:, None]
        self.columns = np.arange(WIDTH, dtype=np.float32)[None, :]
        ceiling_rows = np.arange(self.horizon, dtype=np.float32)[::-1]
        self.ceiling_depth = (70.0 / (ceiling_rows + 3.0))[:, None]
        self.noise = rng.integers(0, self.NOISE, size=(HEIGHT, WIDTH), dtype=np.uint8)
        colours = np.asarray(self.COLOURS, dtype=np.float32)
        levels = np.arange(self.NOISE, dtype=np.float32) - self.NOISE / 2
        self.palette = (colours[:, None, :] + levels[None, :, None]).reshape(-1, 3)

    def _centre(self, world: World, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pose = world.pose
        # In float32, as the depths: a float64 bend makes every mask of the frame float64,
        # 40% of its time (the same pixels but 1 in about 700 frames).
        bend = curvature_along(world, depth[:, 0]).astype(np.float32)
        lateral = -pose.x - pose.heading * depth + 0.05 * bend * depth**2
        return WIDTH / 2 + FOCAL * lateral / depth, FOCAL / depth

    def frame(self, world: World) -> np.ndarray:
        pose = world.pose
        surface = np.empty((HEIGHT, WIDTH), dtype=np.uint8)
        # Ceiling: dark, with light panels over the aisle every 4 m.
        centre, half = self._centre(world, self.ceiling_depth)
        ceiling = surface[: self.horizon]
        ceiling[:] = self.CEILING
        panel = (np.abs(self.columns - centre) < half * 0.5) & (
            ((pose.s + self.ceiling_depth) % 4.0) < 0.8
        )
        ceiling[panel] = self.PANEL
        # Floor between the racks; boxes in bays of 1.7 m, a beam at each bay's end.
        centre, half = self._centre(world, self.depth)
        offset = np.abs(self.columns - centre)
        ground = surface[self.horizon :]
        along = pose.s + self.depth
        bay = (along // 1.7).astype(np.int64) % 4
        ground[:] = (self.BOX + bay).astype(np.uint8)
        ground[((along % 1.7) < 0.25) & (offset >= half)] = self.BEAM
        ground[offset < half * 1.15] = self.FOOT
        ground[offset < half] = self.FLOOR
        ground[np.abs(offset - half * 0.92) < np.maximum(1.0, half * 0.05)] = self.EDGE
        for bystander in world.visible_bystanders():
            self._box(surface, world, bystander.at, bystander.side * 1.3, 0.35, 2.6, self.WORKER)
        if world.obstacle is not None:
            self._box(surface, world, world.obstacle.at, 0.0, 0.7, 0.9, self.PALLET)
        index = surface * np.uint8(self.NOISE) + self.noise
        lit = np.clip(self.palette * (self.tint * world.light), 0, 255).astype(np.uint8)
        image: np.ndarray = np.take(lit, index, axis=0)
        return image

    def _box(
        self,
        surface: np.ndarray,
        world: World,
        at: float,
        lateral: float,
        half_width: float,
        height: float,
        kind: int,
    ) -> None:
        """An upright box standing on the floor `at` metres along the track."""
        pose = world.pose
        distance = at - pose.s
        if not 0.5 < distance < 40:
            return
        bottom = self.horizon + round(70.0 / distance - 3.0)
        if not self.horizon <= bottom < HEIGHT:
            return
        bend = world.track.curvature(at)
        centre_lateral = lateral - pose.x - pose.heading * distance + 0.05 * bend * distance**2
        cx = WIDTH / 2 + FOCAL * centre_lateral / distance
        w = FOCAL * half_width / distance
        top = max(0, bottom - int(FOCAL * height / distance * 0.6))
        lo, hi = int(max(0, cx - w)), int(min(WIDTH, cx + w))
        if lo < hi:
            surface[top : bottom + 1, lo:hi] = kind


def session_tint(rng: random.Random) -> tuple[float, float, float]:
    """Warm, neutral or cold light for one warehouse session."""
    warmth = rng.uniform(-0.15, 0.15)
    return (1.0 + warmth, 1.0, 1.0 - warmth)
