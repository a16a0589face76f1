"""The simulated worlds by name: what `synth`, `drive` and `drive --supervised` look up once.

A world is a value that answers for itself (`World`): its name and one line of help, its
default rollout length, the command roles it records, whether a model's schema can drive it,
how `synth` records its sessions, how `drive` rolls the policy and its baselines out, and how
`drive --supervised` drives its field seeds. The commands hold no world branches; what differs
between worlds lives in the world's own module (`sim.rover_worlds` for road, warehouse and
corridor; `sim.carracing_world` for Gymnasium's CarRacing-v3, the only module path that
imports gymnasium). Importing this module is cheap (no numpy, no gymnasium): `--help` lists
the worlds from it.

Adding a world: a module under `sim/` with a class that satisfies `World`, and one line in
`WORLDS` (docs/simulator.md "Adding a world").
"""

from __future__ import annotations

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.sim.carracing_world import CarRacingWorld
from rovertrain.sim.rover_worlds import CORRIDOR, ROAD, WAREHOUSE
from rovertrain.sim.world_protocol import World

WORLDS: dict[str, World] = {
    world.name: world for world in (ROAD, WAREHOUSE, CORRIDOR, CarRacingWorld())
}


def world_names() -> tuple[str, ...]:
    return tuple(WORLDS)


def lookup(name: str) -> World:
    """The world called `name`, or a usage error that lists the known ones."""
    world = WORLDS.get(name)
    if world is None:
        raise RovertrainError(
            ErrorCode.USAGE, f"--world {name!r}: unknown; known: {', '.join(WORLDS)}."
        )
    return world


def world_help() -> str:
    """`--world`'s help: every world in a line of its own words."""
    return "; ".join(f"{world.name}: {world.summary}" for world in WORLDS.values()) + "."


def seconds_help() -> str:
    """`--seconds`' help: the default rollout length, and every world's that differs."""
    default = WORLDS["road"].default_seconds
    others = "".join(
        f"; {world.name}: {world.default_seconds:g}"
        for world in WORLDS.values()
        if world.default_seconds != default
    )
    return f"Simulated seconds per rollout [default: {default:g}{others}]."


def supervised_names() -> tuple[str, ...]:
    """The worlds `drive --supervised` drives (for its help)."""
    return tuple(name for name, world in WORLDS.items() if world.supervision is not None)


__all__ = ["WORLDS", "lookup", "seconds_help", "supervised_names", "world_help", "world_names"]
