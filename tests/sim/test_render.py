"""The camera pictures (sim/render.py): a bend shows where it is along the depth, so a corner
ahead is in the picture before the rover reaches it. Pure numpy."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rovertrain.sim.render import HEIGHT, AisleRenderer, RoadRenderer, curvature_along
from rovertrain.sim.world import AisleTrack, ObstacleRules, Renderer, World

CORNER_AT = 12.0  # metres ahead of the rover
STRAIGHT = AisleTrack(starts=(0.0,), curvatures=(0.0,))
CORNER = AisleTrack(starts=(0.0, CORNER_AT), curvatures=(0.0, 0.4))


def world(track: AisleTrack, renderer: Renderer) -> World:
    rng = random.Random(0)
    return World(
        track=track,
        rules=ObstacleRules(gap_ms=(1e9, 1e9), clear_ms=(2_000.0, 2_000.0)),
        renderer=renderer,
        roles={"stop": "stop", "drive": "movement"},
        next_obstacle_ms=float("inf"),
        events_rng=rng,
        light_rng=rng,
    )


def ground_depth(renderer: RoadRenderer | AisleRenderer) -> np.ndarray:
    """Metres ahead for each ground row, top (far) to bottom (near)."""
    return np.asarray(renderer.depth, dtype=np.float64).reshape(-1)


def renderers() -> list[RoadRenderer | AisleRenderer]:
    return [
        RoadRenderer(np.random.default_rng(0)),
        AisleRenderer(np.random.default_rng(0), (1.0, 1.0, 1.0)),
    ]


@pytest.mark.parametrize("renderer", renderers(), ids=["road", "warehouse"])
def test_a_corner_ahead_bends_the_far_rows_and_leaves_the_near_ones(
    renderer: RoadRenderer | AisleRenderer,
) -> None:
    """A corner 12 m ahead: the ground rows nearer than 6 m are drawn as on a straight track
    and the rows beyond 14 m bend; between them a row takes the curvature at the far end of
    its block of 8. The warehouse once bent every row by one curvature 4 m ahead, so such a
    corner did not show until the rover was nearly in it."""
    straight = world(STRAIGHT, renderer).render()
    corner = world(CORNER, renderer).render()
    depth = ground_depth(renderer)
    ground = HEIGHT - len(depth)
    near, far = np.flatnonzero(depth < 6.0) + ground, np.flatnonzero(depth > 14.0) + ground
    assert near.size and far.size
    assert np.array_equal(straight[near], corner[near])
    assert not np.array_equal(straight[far], corner[far])


@pytest.mark.parametrize("renderer", renderers(), ids=["road", "warehouse"])
def test_curvature_along_the_depth_is_the_tracks_at_each_row(
    renderer: RoadRenderer | AisleRenderer,
) -> None:
    """Each row holds the track's curvature at its depth, sampled every 8 rows: zero before
    the corner, the corner's beyond it, one value per row."""
    depth = ground_depth(renderer)
    bend = curvature_along(world(CORNER, renderer), depth)
    assert bend.shape == (len(depth), 1)
    sampled = depth[(np.arange(len(depth)) // 8) * 8]
    expected = np.where(sampled >= CORNER_AT, 0.4, 0.0)
    assert np.allclose(bend[:, 0], expected)
