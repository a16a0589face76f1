"""What a person watches after `drive --out`: the policy's rollout as a video (rollout.mp4,
PyAV) and every controller's path along the track (trajectory.png, matplotlib)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from rovertrain.deploy.mp4_writer import Mp4Writer
from rovertrain.sim.drivers import SentCommand
from rovertrain.sim.rollout import FRAME_MS, RolloutTrace
from rovertrain.sim.world import LANE_HALF_WIDTH, MAX_OFFSET

BAR = 16
IN_LANE = np.array([60, 200, 60], dtype=np.uint8)
OUT_OF_LANE = np.array([220, 50, 40], dtype=np.uint8)
STOP_COLOUR = np.array([230, 40, 40], dtype=np.uint8)
MOVE_COLOUR = np.array([40, 200, 255], dtype=np.uint8)
OTHER_COLOUR = np.array([250, 220, 40], dtype=np.uint8)


class RolloutVideo:
    """One frame per 100 ms, enlarged `scale` times: the camera above a status bar (where the
    rover is across the lane, green inside and red outside; the last command sent, by role)."""

    def __init__(self, path: Path, roles: Mapping[str, str], scale: int = 1):
        self.path, self.roles, self.scale = path, roles, scale
        self.writer = Mp4Writer(path, FRAME_MS)
        self.last: SentCommand | None = None

    def __call__(self, frame: np.ndarray, offset: float, sent: list[SentCommand]) -> None:
        if sent:
            self.last = sent[-1]
        if self.scale > 1:
            frame = frame.repeat(self.scale, 0).repeat(self.scale, 1)
        self.writer.add(np.concatenate([frame, self._status_bar(frame.shape[1], offset)], axis=0))

    def _status_bar(self, width: int, x: float) -> np.ndarray:
        bar = np.full((BAR, width, 3), 24, dtype=np.uint8)
        x = min(max(x, -MAX_OFFSET), MAX_OFFSET)
        inside = abs(x) <= LANE_HALF_WIDTH
        scale = (width - 1) / (2 * MAX_OFFSET)
        for edge in (-LANE_HALF_WIDTH, LANE_HALF_WIDTH):
            column = int((edge + MAX_OFFSET) * scale)
            bar[:, column] = 200
        column = int((x + MAX_OFFSET) * scale)
        bar[2:-2, max(0, column - 3) : column + 4] = IN_LANE if inside else OUT_OF_LANE
        if self.last is not None:
            role = self.roles.get(self.last.type, "other")
            colour = {"stop": STOP_COLOUR, "movement": MOVE_COLOUR}.get(role, OTHER_COLOUR)
            bar[2:-2, 2:14] = colour
        return bar

    def close(self) -> None:
        self.writer.close()


def draw_trajectories(path: Path, traces: Sequence[RolloutTrace], world: str, seed: int) -> None:
    """Lateral offset along the distance driven, one line per controller, the lane shaded,
    the policy's obstacles marked by outcome."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(10, 4), dpi=100)
    longest = max((trace.s[-1] for trace in traces if trace.s), default=1.0)
    axis.axhspan(-LANE_HALF_WIDTH, LANE_HALF_WIDTH, color="#dddddd", zorder=0)
    markers = {"stopped": ("s", "#2a9d3a"), "collided": ("X", "#d62728"), "passed": ("o", "#999")}
    for trace in traces:
        s = np.asarray(trace.s)
        x = np.asarray(trace.x)
        axis.plot(s, x, linewidth=1.2, label=trace.controller)
        if trace.controller == "policy":
            for obstacle in trace.obstacles:
                marker, colour = markers.get(obstacle.outcome or "", ("^", "#ff7f0e"))
                axis.scatter([obstacle.at], [0.0], marker=marker, color=colour, zorder=3, s=40)
    axis.set_xlim(0, max(1.0, longest))
    axis.set_ylim(-MAX_OFFSET - 0.1, MAX_OFFSET + 0.1)
    axis.set_xlabel("distance along the track (m)")
    axis.set_ylabel("lateral offset (lane half-widths)")
    axis.set_title(f"{world}, seed {seed}: grey band = lane; policy's obstacles: ■ stopped, ✕ hit")
    axis.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
