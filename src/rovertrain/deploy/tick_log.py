"""`drive --out`: the policy's first rollout tick by tick (`ticks.ndjson`), for finding out
why a policy that passed the gate stalls, weaves or stops in front of nothing.

One JSON object per policy tick (every 100 ms): where the rover was (`s` metres along the
track, `x` lane half-widths off the centre line, the track's `curvature` there, `moving`),
what the policy decided (`probability` and `fire` per command type, `steer`: the steering
re-send, `kept`: the tapped values whose release was kept back, `values` per type) and the
commands that went out at that tick (`sent`; at the first tick the operator's opening comes
first). `DecisionLog` keeps the decisions as the policy
drives; `tick_rows` (pure) joins them with the rollout's trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rovertrain.contracts.command_schema import HUMAN
from rovertrain.runtime.policy import Decision, RoverPolicy
from rovertrain.sim.rollout import RolloutTrace
from rovertrain.sim.world import STEP_MS
from rovertrain.store.durable import replacing

TICKS_FILE = "ticks.ndjson"


class DecisionLog:
    """A `RoverPolicy` as `drive` runs it, keeping each decision of the rollout under way
    (a rollout starts with `reset`, which clears them)."""

    def __init__(self, policy: RoverPolicy):
        self.policy = policy
        self.schema = policy.schema
        self.tick_ms = policy.tick_ms
        self.decisions: list[Decision] = []

    def reset(self) -> None:
        self.decisions = []
        self.policy.reset()

    def observe_command(
        self,
        t_ms: float,
        command_type: str,
        values: Mapping[str, float] | None = None,
        by: str = HUMAN,
    ) -> bool:
        return self.policy.observe_command(t_ms, command_type, values, by)

    def tick(self, frame: np.ndarray, t_ms: float) -> Decision:
        decision = self.policy.tick(frame, t_ms)
        self.decisions.append(decision)
        return decision


def _rounded(values: Mapping[str, float]) -> dict[str, float]:
    return {name: round(float(value), 4) for name, value in values.items()}


def tick_rows(
    decisions: list[Decision],
    trace: RolloutTrace,
    curvature: Callable[[float], float],
) -> list[dict[str, Any]]:
    """One row per decision, with where the rover was after that 10 ms tick's move and the
    commands sent at the decision's time."""
    sent: dict[float, list[dict[str, Any]]] = {}
    for command in trace.commands:
        item: dict[str, Any] = {"type": command.type}
        if command.values is not None:
            item["values"] = _rounded(command.values)
        sent.setdefault(command.t, []).append(item)
    rows = []
    for decision in decisions:
        index = min(int(decision.t_ms // STEP_MS), len(trace.s) - 1)
        s = trace.s[index]
        rows.append(
            {
                "t": decision.t_ms,
                "s": round(s, 3),
                "x": round(trace.x[index], 4),
                "curvature": round(curvature(s), 4),
                "moving": trace.moving[index],
                "probability": _rounded(decision.probability),
                "fire": dict(decision.fire),
                "steer": dict(decision.steer),
                "kept": {kind: list(names) for kind, names in decision.kept.items()},
                "values": {kind: _rounded(named) for kind, named in decision.values.items()},
                "sent": sent.get(decision.t_ms, []),
            }
        )
    return rows


def write_ticks(path: Path, rows: list[dict[str, Any]]) -> None:
    """Written whole, then renamed over `path` (`store.durable.replacing`): never a
    half-written file."""
    with replacing(path) as temporary:
        temporary.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
