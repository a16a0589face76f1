"""The named worlds and how one session (or rollout seed) of each is set up.

- `road`: a curving country road through grass, cones every 14-26 s, commands stop/drive.
- `warehouse`: straight aisles and tight corners between racks, pallets every 30-48 s,
  workers beside the aisle whom the driver warns with `horn` (role other), per-session light
  level and colour, a wider spread of driver reaction times.
- `corridor`: a long warehouse corridor that bends gently one way then the other, pallets
  every 30-48 s, commands stop/drive, and a careful driver who keeps the rover close to the
  centre line (twice the road driver's corrections, a third of the unsteadiness): its
  recordings never show the rover far off centre (the world of issue 27, where imitation
  alone is expected to drift; docs/learning.md "Learning from take-overs").

`build` draws a session's parameters from one generator in the world's fixed order (its
kind's `draw`: the road world's order is the original synth's, so recordings stay identical
for a seed). The generators the
world and the driver use while running default to that same one (recordings); rollouts pass
their own so that every controller meets the same world.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from rovertrain.sim.choices import CONTINUOUS, KEYBOARD, Drift
from rovertrain.sim.drivers import (
    KEEPALIVE_MS,
    KEYBOARD_PAGE,
    DriverStyle,
    HumanDriver,
    SentCommand,
    keyboard_page,
)
from rovertrain.sim.recorder import H264, VP8, VP9, VideoFormat
from rovertrain.sim.render import AisleRenderer, RoadRenderer, session_tint
from rovertrain.sim.world import (
    AisleTrack,
    GentleTrack,
    ObstacleRules,
    Renderer,
    RoadTrack,
    Track,
    World,
)


@dataclass(frozen=True)
class SessionDraws:
    """What a world draws for one session (its track, its look, its driver's timing), beside
    what its kind fixes (roles, the driver's style)."""

    track: Track
    rules: ObstacleRules
    renderer: Renderer
    reaction_ms: float
    first_idle_ms: float
    first_obstacle_ms: float
    keepalive_ms: float
    light: float = 1.0
    light_range: tuple[float, float] = (0.75, 1.25)
    bystander_gap: tuple[float, float] | None = None
    pull: float = 0.0


SessionDraw = Callable[[random.Random, np.random.Generator], SessionDraws]
"""A world's session draws from `rng` in its order (the same seed writes the same
recordings), its renderer's textures from the second generator."""


def draw_road(rng: random.Random, texture: np.random.Generator) -> SessionDraws:
    """The road's draws, in the original synth's order."""
    phases = (rng.uniform(0, 6.3), rng.uniform(0, 6.3), rng.uniform(0, 6.3))
    return SessionDraws(
        track=RoadTrack(phases),
        rules=ObstacleRules(gap_ms=(14_000.0, 26_000.0)),
        renderer=RoadRenderer(texture),
        reaction_ms=rng.uniform(150, 300),
        first_idle_ms=rng.uniform(30_000, 60_000),
        first_obstacle_ms=rng.uniform(6_000, 14_000),
        keepalive_ms=KEEPALIVE_MS + rng.uniform(-10, 10),
    )


@dataclass(frozen=True)
class IndoorDraws:
    """What an indoor world (warehouse, corridor) draws for a session after its track, in
    the warehouse's original order (the same seed writes the same recordings)."""

    reaction_ms: float
    first_idle_ms: float
    first_obstacle_ms: float
    keepalive_ms: float
    tint: tuple[float, float, float]

    @staticmethod
    def draw(rng: random.Random, reaction_ms: tuple[float, float]) -> IndoorDraws:
        return IndoorDraws(
            reaction_ms=rng.uniform(*reaction_ms),
            first_idle_ms=rng.uniform(40_000, 80_000),
            first_obstacle_ms=rng.uniform(8_000, 16_000),
            keepalive_ms=KEEPALIVE_MS + rng.uniform(-10, 10),
            tint=session_tint(rng),
        )

    def session(
        self, track: Track, texture: np.random.Generator, light: float, spread: float
    ) -> SessionDraws:
        """An indoor session: pallets every 30-48 s, the light level `light` ± `spread`."""
        return SessionDraws(
            track=track,
            rules=ObstacleRules(gap_ms=(30_000.0, 48_000.0)),
            renderer=AisleRenderer(texture, self.tint),
            reaction_ms=self.reaction_ms,
            first_idle_ms=self.first_idle_ms,
            first_obstacle_ms=self.first_obstacle_ms,
            keepalive_ms=self.keepalive_ms,
            light=light,
            light_range=(light - spread, light + spread),
        )


def draw_warehouse(rng: random.Random, texture: np.random.Generator) -> SessionDraws:
    """Aisles and corners, a wide spread of reaction times, the light, workers."""
    track = AisleTrack.generate(rng)
    draws = IndoorDraws.draw(rng, (120, 450))
    session = draws.session(track, texture, rng.uniform(0.6, 1.15), 0.12)
    return replace(session, bystander_gap=(20.0, 45.0))


def draw_corridor(rng: random.Random, texture: np.random.Generator) -> SessionDraws:
    """One gentle sine, a quick driver, the light, a rover that pulls to one side."""
    track = GentleTrack(rng.uniform(0.12, 0.25), rng.uniform(10.0, 16.0), rng.uniform(0, 6.3))
    draws = IndoorDraws.draw(rng, (120, 250))
    session = draws.session(track, texture, rng.uniform(0.7, 1.1), 0.1)
    return replace(session, pull=rng.choice((-1.0, 1.0)) * rng.uniform(0.05, 0.15))


@dataclass(frozen=True)
class RecordingDraws:
    """How a session of a world is recorded: the camera's frame rate, its capture offset, the
    recorder's video format."""

    fps: int
    offset_ms: float
    video: VideoFormat


def browser_recording(rng: random.Random) -> RecordingDraws:
    """The road's: a browser's MediaRecorder (VP8 WebM), in the original synth's draws."""
    return RecordingDraws(rng.choice((15, 20, 24)), round(rng.uniform(40, 160), 1), VP8)


def rover_recording(rng: random.Random) -> RecordingDraws:
    """The indoor worlds': H.264 MP4 or VP9 WebM, chosen per session."""
    fps = rng.choice((15, 20, 25, 30))
    return RecordingDraws(fps, round(rng.uniform(20, 200), 1), rng.choice((H264, VP9)))


@dataclass(frozen=True)
class WorldKind:
    name: str
    roles: Mapping[str, str]
    style: DriverStyle
    session_prefix: str
    draw: SessionDraw  # a session's parameters
    recording: Callable[[random.Random], RecordingDraws]  # drawn before `draw` by synth

    def opening(self) -> SentCommand:
        """A first command that ignores the scene: cruise straight ahead."""
        return SentCommand(0.0, "drive", {"speed": self.style.keyboard_speed, "turn": 0.0})


ROAD = WorldKind(
    "road",
    {"stop": "stop", "drive": "movement"},
    DriverStyle(),
    "drive",
    draw_road,
    browser_recording,
)
WAREHOUSE = WorldKind(
    "warehouse",
    {"stop": "stop", "drive": "movement", "horn": "other"},
    DriverStyle(
        lookahead=2.0,
        stop_distance=4.5,
        cruise=0.55,
        slow_in_bends=0.2,
        keyboard_speed=0.5,
        idle_every_ms=(50_000.0, 90_000.0),
        warn_type="horn",
    ),
    "aisle",
    draw_warehouse,
    rover_recording,
)
CORRIDOR = WorldKind(
    "corridor",
    {"stop": "stop", "drive": "movement"},
    DriverStyle(
        lookahead=2.5,
        stop_distance=4.5,
        cruise=0.6,
        slow_in_bends=0.1,
        keyboard_speed=0.55,
        centring=1.6,
        heading_gain=2.4,
        steer_noise=0.01,
    ),
    "corridor",
    draw_corridor,
    rover_recording,
)
WORLDS: dict[str, WorldKind] = {kind.name: kind for kind in (ROAD, WAREHOUSE, CORRIDOR)}


ROLLOUT, FIELD = "rollout", "field"
"""The two families of world seeds: judged on, driven under supervision (`rollout_scenario`)."""


@dataclass
class Scenario:
    kind: WorldKind
    world: World
    human: HumanDriver


def human_opening(
    name: str,
    seed: int,
    namespace: str = ROLLOUT,
    driver: str = CONTINUOUS,
    drift: Drift | None = None,
) -> SentCommand:
    """The operator's opening command on rollout seed `seed`: the first `drive` the scenario's
    human sends at the start (the turn the scene asks for), at t=0, with the rover where
    `drift` parks it (None: on the centre line). A fixed straight opening put the rover off
    the road before the policy's first decision where a seed starts in a sharp bend, a state
    no recording starts in."""
    scenario = rollout_scenario(name, seed, namespace, driver)
    world = scenario.world
    world.park(drift)
    world.begin_tick()
    for command in scenario.human.act(world.t_ms, world.render, world):
        if world.roles.get(command.type) == "movement" and command.values is not None:
            return SentCommand(0.0, command.type, dict(command.values))
    return scenario.kind.opening()


@dataclass(frozen=True)
class Streams:
    """A rollout's own generators for the world's events, its lighting and the human driver
    (a recording draws all from the session's one generator)."""

    events: random.Random
    light: random.Random
    driver: random.Random


def build(
    name: str, rng: random.Random, profile: str, renderer_seed: int, streams: Streams | None = None
) -> Scenario:
    """One session of world `name`: its parameters drawn from `rng` (`WorldKind.draw`), its
    human driving with `profile` (`KEYBOARD_PAGE`: through a keyboard page)."""
    kind = WORLDS[name]
    draws = kind.draw(rng, np.random.default_rng(renderer_seed))
    world = World(
        track=draws.track,
        rules=draws.rules,
        renderer=draws.renderer,
        roles=kind.roles,
        next_obstacle_ms=draws.first_obstacle_ms,
        events_rng=streams.events if streams else rng,
        light_rng=streams.light if streams else rng,
        light_range=draws.light_range,
        light=draws.light,
        bystander_gap=draws.bystander_gap,
        pull=draws.pull,
    )
    human = HumanDriver(
        streams.driver if streams else rng,
        profile,
        draws.reaction_ms,
        draws.first_idle_ms,
        draws.keepalive_ms,
        kind.style,
        keyboard_page(kind.style) if profile == KEYBOARD_PAGE else None,
    )
    return Scenario(kind, world, human)


ROLLOUT_PROFILES = {CONTINUOUS: "gamepad", KEYBOARD: KEYBOARD_PAGE}
"""The human of a rollout, by driver (`choices.DRIVERS`)."""


def rollout_scenario(
    name: str, seed: int, namespace: str = ROLLOUT, driver: str = CONTINUOUS
) -> Scenario:
    """World seed `seed` of `name` for closed-loop rollouts: the same world for every
    controller (its own generators for events, lighting and the human driver).

    `namespace`: ROLLOUT for the worlds a policy is judged on, FIELD for the worlds it drives
    under supervision (`drive --supervised`), so that what a supervised drive records never
    shows the worlds the next model is judged on."""
    rng = random.Random(f"{namespace}:{name}:{seed}")
    renderer_seed = rng.randrange(2**32)
    streams = Streams(
        events=random.Random(f"{namespace}:{name}:{seed}:events"),
        light=random.Random(f"{namespace}:{name}:{seed}:light"),
        driver=random.Random(f"{namespace}:{name}:{seed}:driver"),
    )
    return build(name, rng, ROLLOUT_PROFILES[driver], renderer_seed, streams)
