"""The rover's own simulated worlds as registry entries: road, warehouse and corridor
(`sim.worlds` sets a session of each up; `sim.rollout` drives it; `sim.synth` records it;
`sim.field_drive` drives it under supervision). Importing this module is cheap: what an entry
does imports its parts when it is called."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rovertrain.sim.world_protocol import (
    DriveOutcome,
    DriveRequest,
    Film,
    SupervisedRequest,
    SynthRequest,
)

if TYPE_CHECKING:
    from rovertrain.contracts.command_schema import Slot
    from rovertrain.sim.rollout import AnyReport, AnyRollout, RolloutTrace


@dataclass(frozen=True)
class FieldSupervision:
    """`drive --supervised` on a rover world: its FIELD seeds (`sim.field_drive`)."""

    world: str

    def session_id(self, model: str, seed: int) -> str:
        from rovertrain.sim.field_drive import field_session_id

        return field_session_id(self.world, model, seed)

    def drive(self, request: SupervisedRequest) -> AnyReport:
        from rovertrain.sim.field_drive import field_report

        return field_report(self.world, request)


@dataclass(frozen=True)
class RoverWorld:
    """One of the simulator's worlds (`sim.worlds.WORLDS` holds its driver and roles)."""

    name: str
    summary: str
    default_seconds: float = 120.0

    def roles(self) -> Mapping[str, str]:
        from rovertrain.sim.worlds import WORLDS as KINDS

        return KINDS[self.name].roles

    def require_packages(self) -> None:
        return None  # the simulator is numpy and PyAV, installed with rovertrain

    def check_policy(self, schema: Sequence[Slot], seconds: float) -> None:
        return None  # the human model's roles: any schema's commands can be applied

    def synthesize(self, request: SynthRequest) -> Mapping[str, object]:
        from rovertrain.sim.synth import write_dataset

        return write_dataset(request, world=self.name)

    def drive(self, request: DriveRequest, film: Film) -> DriveOutcome:
        from rovertrain.sim.rollout import Rollouts, closed_loop_report

        roles = self.roles()

        def on_rollout(metrics: AnyRollout, trace: RolloutTrace) -> None:
            film.rollout_done(metrics, trace)
            request.on_rollout(metrics)

        rollouts = Rollouts(
            self.name,
            request.seeds,
            request.seconds,
            lambda: request.policy,
            request.controllers,
            starts=request.starts,
            driver=request.driver,
        )
        report = closed_loop_report(
            rollouts,
            on_rollout=on_rollout,
            video=lambda seed: film.video(seed, roles, 1),
        )
        simulated = request.seconds * len(report.rollouts)
        return DriveOutcome(report, simulated)

    @property
    def supervision(self) -> FieldSupervision:
        return FieldSupervision(self.name)


ROAD = RoverWorld("road", "curves and cones")
WAREHOUSE = RoverWorld("warehouse", "aisles, pallets, a horn, H.264/VP9 videos")
CORRIDOR = RoverWorld("corridor", "gentle bends, pallets, a careful driver")
