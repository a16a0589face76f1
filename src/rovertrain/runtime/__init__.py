"""The rover side: run an exported policy one camera frame and one tick at a time.

Imports numpy (and onnxruntime, when a policy is loaded) only: no torch, no av, no click.

    from rovertrain.runtime import RoverPolicy
    policy = RoverPolicy.load("exported-folder")
    policy.observe_command(t_ms, "drive", {"speed": 0.6, "turn": -0.2})
    decision = policy.tick(frame, t_ms)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rovertrain.runtime.policy import Decision, RoverPolicy

__all__ = ["Decision", "RoverPolicy"]


def __getattr__(name: str) -> object:
    # Lazy: training imports `runtime.state` and `runtime.frames` without onnxruntime.
    if name in __all__:
        from rovertrain.runtime import policy

        return getattr(policy, name)
    raise AttributeError(name)
