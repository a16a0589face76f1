"""The choices every world offers `synth` and `drive`: who drives (`DRIVERS`) and how a
controller under test gets the rover (`STARTS`). Importing this module is cheap: the cli's
help lists them from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CONTINUOUS, KEYBOARD = "continuous", "keyboard"
DRIVERS: dict[str, str] = {
    CONTINUOUS: "values as the hand moves (a gamepad's sticks, a slider page), a keepalive",
    KEYBOARD: "a keyboard page: a few fixed levels per value, repeated while a key is held, "
    "the rest level when released; bends followed by tapping",
}
"""The people every world has: who records a `synth` session (`--driver`) and who drives the
human baseline of `drive`. Every world offers both."""


HAND_OVER_MS = 2000.0
"""How long the person drives before a `handOver` start hands the rover over."""
DRIFT_OFFSET = 1.45
"""Where a `drifted` start parks the rover: lane half-widths from the centre line, past the
lane's edge (1) and short of the rover worlds' kerb or rack (`sim.world.MAX_OFFSET`, 1.6)."""
DRIFT_HEADING = 0.4
"""How far a `drifted` rover's nose points out of its lane, radians from the lane's direction."""
HAND_OVER, REST, DRIFTED = "handOver", "rest", "drifted"
STARTS: dict[str, str] = {
    HAND_OVER: f"the person drives the first {HAND_OVER_MS / 1000:g} s, then hands the moving "
    "rover over",
    REST: "the rover parked, the policy engaged, nothing sent yet",
    DRIFTED: f"the rover parked past its lane's edge ({DRIFT_OFFSET:g} half-widths out, its "
    "nose turned out toward the kerb, rack or grass; one side on even seeds, the other on "
    "odd), "
    "the policy engaged, nothing sent yet",
}
"""How a controller under test gets the rover in a rollout (`sim.hand_over`), in report order."""
DEFAULT_STARTS = (HAND_OVER, REST)
"""The starts `drive` reports unless told (`--start`): every rollout of a drifted start is
one more per seed, and it asks another question (does the rover turn back?)."""
SUPERVISED_STARTS = (HAND_OVER, DRIFTED)
"""Where `drive --supervised` parks the rover before the person's opening command engages
the policy (one per drive; the first is the default). From the drifted place the person
takes over at once and drives back, so the recording shows what no drive from the centre
line does: a person turning a parked rover away from the kerb or rack. Why: the field loop
is how a policy learns a state its recordings never reach (docs/learning.md, "The field loop
from a drifted place")."""


@dataclass(frozen=True)
class Drift:
    """Where a `drifted` start parks the rover: `side` (+1 or -1, the sign of a world's lateral
    offset) times `DRIFT_OFFSET` from the centre line, its nose `DRIFT_HEADING` further out.

    Why: a person's recordings never show a rover nose to a kerb or a wall, and a policy
    that drifted there must still turn away; a maze policy that never had to stood pressed
    against a wall on 68% of its ticks (issue 48). Parked, with nothing sent, so the policy
    alone decides how to leave; both sides over the seeds, since a policy may turn one way
    better than the other."""

    side: float

    @property
    def offset(self) -> float:
        """Lane half-widths from the centre line, signed."""
        return self.side * DRIFT_OFFSET

    @property
    def heading(self) -> float:
        """Radians from the lane's direction, signed like the offset (pointing out)."""
        return self.side * DRIFT_HEADING


def drift_of(start: str, seed: int) -> Drift | None:
    """Where a rollout of `start` on world seed `seed` parks the rover (None: where the world
    starts it, on its lane's centre line)."""
    if start != DRIFTED:
        return None
    return Drift(1.0 if seed % 2 == 0 else -1.0)


def choices_help(choices: Mapping[str, str]) -> str:
    """A `--driver` or `--start` help text: every choice in its own words."""
    return "; ".join(f"{name}: {words}" for name, words in choices.items()) + "."
