"""Gymnasium's CarRacing-v3 as a registry entry (needs `rovertrain[sim]`): `sim.carracing`
records it for `synth`, `sim.carracing_drive` drives it for `drive`. Importing this module is
cheap; gymnasium is imported by those modules only, when the entry is called."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.sim.world_protocol import DriveOutcome, DriveRequest, Film, SynthRequest

if TYPE_CHECKING:
    from rovertrain.contracts.command_schema import Slot
    from rovertrain.sim.carracing_drive import RaceTrace
    from rovertrain.sim.rollout import AnyRollout

NAME = "carracing"
DEFAULT_SECONDS = 30.0
"""A rollout's length: a lap of the scripted driver takes 21-26 s, and a completed lap ends
the episode."""
VIDEO_SCALE = 4  # the 96x96 observation, enlarged for a person to watch


@dataclass(frozen=True)
class CarRacingWorld:
    name: str = NAME
    summary: str = "Gymnasium's CarRacing-v3, a scripted teleop driver (needs rovertrain[sim])"
    default_seconds: float = DEFAULT_SECONDS
    supervision: None = None  # the supervisor's envelope is the rover worlds' lane and obstacles

    def roles(self) -> Mapping[str, str]:
        from rovertrain.sim.carracing import ROLES

        return ROLES

    def require_packages(self) -> None:
        from rovertrain.sim.carracing import require_sim_packages

        require_sim_packages()

    def check_policy(self, schema: Sequence[Slot], seconds: float) -> None:
        """A policy that can drive the car (a movement-role `drive` with `turn` and `throttle`,
        as `synth --world carracing` records), for longer than the hand-over."""
        from rovertrain.sim.choices import HAND_OVER_MS

        drive = next((slot for slot in schema if slot["type"] == "drive"), None)
        if (
            drive is None
            or drive["role"] != "movement"
            or not {"turn", "throttle"} <= set(drive["values"])
        ):
            raise RovertrainError(
                ErrorCode.USAGE,
                f"--world {self.name} drives the car with drive {{turn, throttle}}; this "
                f"policy's schema has {[(slot['type'], list(slot['values'])) for slot in schema]}.",
            )
        if seconds * 1000 <= HAND_OVER_MS:
            raise RovertrainError(
                ErrorCode.USAGE,
                f"--seconds {seconds:g}: on {self.name} the scripted driver has the car for the "
                f"first {HAND_OVER_MS / 1000:g} s; give more.",
            )

    def synthesize(self, request: SynthRequest) -> Mapping[str, object]:
        if request.shuffle_commands:
            raise RovertrainError(
                ErrorCode.USAGE, f"--shuffle-commands is not offered for --world {self.name}."
            )
        from rovertrain.sim.carracing import write_dataset

        return write_dataset(request)

    def drive(self, request: DriveRequest, film: Film) -> DriveOutcome:
        """The rollouts (`sim.carracing_drive`) and the simulated seconds actually driven (an
        episode may end before `seconds`: a lap, or the car off the playfield)."""
        from rovertrain.sim.carracing_drive import carracing_report

        roles = self.roles()
        driven: list[float] = []

        def on_race(metrics: AnyRollout, trace: RaceTrace) -> None:
            driven.append(trace.driven_seconds)
            request.on_rollout(metrics)

        report = carracing_report(
            lambda: request.policy,
            request.seeds,
            request.seconds,
            controllers=request.controllers,
            on_rollout=on_race,
            video=lambda seed: film.video(seed, roles, VIDEO_SCALE),
            driver=request.driver,
            starts=request.starts,
        )
        return DriveOutcome(report, sum(driven))


__all__ = ["CarRacingWorld"]
