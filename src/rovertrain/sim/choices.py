"""The choices every world offers `synth` and `drive`: who drives (`DRIVERS`) and how a
controller under test gets the rover (`STARTS`). Importing this module is cheap: the cli's
help lists them from it.
"""

from __future__ import annotations

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
HAND_OVER, REST = "handOver", "rest"
STARTS: dict[str, str] = {
    HAND_OVER: f"the person drives the first {HAND_OVER_MS / 1000:g} s, then hands the moving "
    "rover over",
    REST: "the rover parked, the policy engaged, nothing sent yet",
}
"""How a controller under test gets the rover in a rollout (`sim.hand_over`), in report order."""


def driver_help() -> str:
    return "; ".join(f"{name}: {words}" for name, words in DRIVERS.items()) + "."
