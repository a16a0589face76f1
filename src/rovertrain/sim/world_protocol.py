"""What a simulated world answers for (`World`), and the records `drive` hands it.

`sim.registry` names the worlds; the commands (`synth`, `drive`, `drive --supervised`) look a
world up once and call it. Importing this module is cheap (no numpy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rovertrain.sim.choices import CONTINUOUS, HAND_OVER
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    from pathlib import Path

    from rovertrain.contracts.command_schema import Slot
    from rovertrain.sim.drivers import TickPolicy
    from rovertrain.sim.rollout import AnyReport, AnyRollout, FrameSink, RolloutTrace
    from rovertrain.sim.supervised import Envelope, SupervisedPolicy, SupervisionLog


class Film(Protocol):
    """What `drive --out` keeps of a drive (`deploy.drive.DriveMedia`): the policy's rollout on
    the first seed as a video, and the paths every controller drove there."""

    def video(self, seed: int, roles: Mapping[str, str], scale: int) -> FrameSink | None:
        """The frame sink of the policy's rollout on `seed` (None: not filmed). `scale`: how
        many times a frame is enlarged (a small observation)."""
        ...

    def rollout_done(self, metrics: AnyRollout, trace: RolloutTrace) -> None:
        """A rollout on a world with a lane path (the ticks and the trajectory picture)."""
        ...


@dataclass(frozen=True)
class SynthRequest:
    """One `synth`: `sessions` recordings of `minutes` each under `out`, drawn from `seed`,
    driven by `driver` (`DRIVERS`); `shuffle_commands` scrambles the command times (a data
    set with nothing to learn)."""

    out: str
    sessions: int
    minutes: float
    seed: int
    shuffle_commands: bool = False
    driver: str = CONTINUOUS


@dataclass(frozen=True)
class DriveRequest:
    """One `drive`: which controllers drive which seeds for how long."""

    policy: TickPolicy
    seeds: Sequence[int]
    seconds: float
    controllers: Sequence[str]
    on_rollout: Callable[[AnyRollout], None]
    driver: str = CONTINUOUS  # who drives the human baseline (`DRIVERS`)
    starts: Sequence[str] = (HAND_OVER,)  # how the controllers get the rover (`STARTS`)


@dataclass(frozen=True)
class DriveOutcome:
    report: AnyReport
    simulated_seconds: float  # a rollout may end early (a lap on CarRacing)


@dataclass(frozen=True)
class FieldRecording:
    """Where one supervised rollout is recorded, and what the recording says of its drive."""

    root: Path
    session_id: str
    rover: str
    model: str

    @property
    def directory(self) -> Path:
        return Layout(self.root).recording_dir(self.session_id)


OnSupervisedRollout = Callable[["AnyRollout", "RolloutTrace", "SupervisionLog"], None]


@dataclass(frozen=True)
class SupervisedRequest:
    """One `drive --supervised`: the policy on field seeds for `seconds` under `envelope`,
    recorded where `record(seed)` names a recording."""

    policy: SupervisedPolicy
    seeds: Sequence[int]
    seconds: float
    envelope: Envelope
    record: Callable[[int], FieldRecording | None]
    on_rollout: OnSupervisedRollout
    driver: str = CONTINUOUS
    """How the supervising person drives (`sim.choices.DRIVERS`): a gamepad, or a keyboard
    page when the recordings came from one."""
    start: str = HAND_OVER
    """Where the person engages the policy (`sim.choices.SUPERVISED_STARTS`): on the centre
    line, or parked past the lane's edge (the person takes over at once and drives back)."""


class Supervision(Protocol):
    """`drive --supervised` on a world that offers it (`World.supervision`)."""

    def session_id(self, model: str, seed: int) -> str:
        """The recording name of field seed `seed` driven by `model`."""
        ...

    def drive(self, request: SupervisedRequest) -> AnyReport:
        """Every seed driven under supervision (recorded where the request says), pooled as
        one controller."""
        ...


class World(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str:
        """One line of `--world` help."""
        ...

    @property
    def default_seconds(self) -> float:
        """A `drive` rollout's length unless --seconds says."""
        ...

    def roles(self) -> Mapping[str, str]:
        """The command types a recording of this world holds, by role."""
        ...

    def require_packages(self) -> None:
        """A `missing_dependency` error unless what the world needs is installed."""
        ...

    def check_policy(self, schema: Sequence[Slot], seconds: float) -> None:
        """A usage error unless a policy with `schema` can drive this world for `seconds`."""
        ...

    def synthesize(self, request: SynthRequest) -> Mapping[str, object]:
        """`synth`: recordings under OUT and a ready job; the `synthesized` event's fields."""
        ...

    def drive(self, request: DriveRequest, film: Film) -> DriveOutcome:
        """`drive`: the policy and its baselines on the world seeds."""
        ...

    @property
    def supervision(self) -> Supervision | None:
        """`drive --supervised` on this world (None: not offered)."""
        ...
