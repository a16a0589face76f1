"""What a person watches after `replay --out`: the camera with the model's commands drawn on
it (overlay.mp4, PyAV) and the probabilities and values against the human's over time
(timeline.png, matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rovertrain.contracts.command_schema import Schema, Slot
from rovertrain.contracts.observation import TICK_MS
from rovertrain.deploy.mp4_writer import Mp4Writer
from rovertrain.deploy.replay_trace import HumanWindows, TraceArrays

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from rovertrain.runtime.policy import Decision

VIDEO_WIDTH = 320
ROW = 14
MODEL_COLOUR = np.array([40, 200, 255], dtype=np.uint8)
HUMAN_COLOUR = np.array([255, 170, 30], dtype=np.uint8)
FIRE_COLOUR = np.array([60, 230, 60], dtype=np.uint8)


class OverlayWriter:
    """One video frame per tick: the camera, then per command type a probability bar (green
    when the model fires, a threshold mark), the human's command as an orange box, and per
    value a bar pair: model (blue) above human (orange), centred at zero."""

    def __init__(self, path: Path, schema: Schema, threshold: float):
        self.path = path
        self.schema = schema
        self.threshold = threshold
        self.video = Mp4Writer(path, TICK_MS)

    def add(
        self,
        rgb: np.ndarray,
        rotation: int,
        decision: Decision,
        fires: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """This tick's camera frame (as decoded) with the model's `decision` and what the
        human sent in its window (`fires` [SLOTS], `values` [SLOTS, VALUES])."""
        image = np.rot90(rgb, k=(rotation // 90) % 4) if rotation else rgb
        step = max(1, int(np.ceil(image.shape[1] / VIDEO_WIDTH)))
        camera = image[::step, ::step]
        width = camera.shape[1] - camera.shape[1] % 2
        picture = np.concatenate([camera[:, :width], self._panel(width, decision, fires, values)])
        if picture.shape[0] % 2:  # H.264 in yuv420p needs an even height
            picture = picture[:-1]
        self.video.add(picture)

    def _panel(
        self, width: int, decision: Decision, fires: np.ndarray, values: np.ndarray
    ) -> np.ndarray:
        rows = sum(1 + len(slot["values"]) for slot in self.schema)
        panel = np.full((rows * ROW + 4, width, 3), 24, dtype=np.uint8)
        line = 2
        for index, slot in enumerate(self.schema):
            name = slot["type"]
            bar = int(decision.probability[name] * (width - 24))
            colour = FIRE_COLOUR if decision.fire[name] else MODEL_COLOUR
            panel[line + 2 : line + ROW - 2, 20 : 20 + bar] = colour
            mark = 20 + int(self.threshold * (width - 24))
            panel[line : line + ROW, mark : mark + 1] = 200
            if fires[index]:
                panel[line + 1 : line + ROW - 1, 2:16] = HUMAN_COLOUR
            line += ROW
            centre = width // 2
            for column, value_name in enumerate(slot["values"]):
                predicted = decision.values[name][value_name]
                _value_bar(panel, line + 1, centre, width, predicted, MODEL_COLOUR)
                if fires[index]:
                    human = float(values[index, column])
                    _value_bar(panel, line + ROW // 2, centre, width, human, HUMAN_COLOUR)
                panel[line : line + ROW, centre : centre + 1] = 120
                line += ROW
        return panel

    def close(self) -> None:
        self.video.close()


def _value_bar(
    panel: np.ndarray, top: int, centre: int, width: int, value: float, colour: np.ndarray
) -> None:
    span = int(max(-1.0, min(1.0, value)) * (width // 2 - 4))
    low, high = sorted((centre, centre + span))
    panel[top : top + ROW // 2 - 1, low : max(high, low + 1)] = colour


def draw_timeline(
    path: Path,
    trace: TraceArrays,
    human: HumanWindows,
    schema: Schema,
    threshold: float,
    session_id: str,
) -> None:
    """One row per command type (probability, threshold, human commands), plus one row per
    value (model against human). `human`: the windows of every tick of `trace`."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        from rovertrain.contracts.errors import RovertrainError

        raise RovertrainError(
            "missing_dependency",
            "timeline.png needs matplotlib: install rovertrain[report].",
            str(error),
        ) from None
    seconds = trace.ticks / 1000.0
    rows: list[tuple[int, int | None]] = [(index, None) for index in range(len(schema))]
    rows += [
        (index, column)
        for index, slot in enumerate(schema)
        for column in range(len(slot["values"]))
    ]
    figure, axes = plt.subplots(
        len(rows), 1, figsize=(14, 1.6 * len(rows) + 0.6), sharex=True, squeeze=False
    )
    for axis, (index, column) in zip(axes[:, 0], rows, strict=True):
        if column is None:
            _probability_row(axis, seconds, trace, human, index, schema[index], threshold)
        else:
            _value_row(axis, seconds, trace, human, index, schema[index], column)
        axis.legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("seconds (command clock)")
    figure.suptitle(f"replay of {session_id}: model against the human, per 100 ms window")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def _probability_row(
    axis: Axes,
    seconds: np.ndarray,
    trace: TraceArrays,
    human: HumanWindows,
    index: int,
    slot: Slot,
    threshold: float,
) -> None:
    """The model's probability for one type, the threshold, and when the human sent it."""
    probability = trace.probability[:, index]
    axis.plot(seconds, probability, color="tab:blue", linewidth=0.8, label="model p")
    axis.axhline(threshold, color="grey", linestyle="--", linewidth=0.7)
    sent = human.fires[:, index]
    axis.scatter(
        seconds[sent],
        np.full(int(sent.sum()), 1.02),
        marker="|",
        color="tab:orange",
        label="human sent",
    )
    axis.set_ylim(-0.02, 1.08)
    axis.set_ylabel(slot["type"], rotation=0, ha="right")


def _value_row(
    axis: Axes,
    seconds: np.ndarray,
    trace: TraceArrays,
    human: HumanWindows,
    index: int,
    slot: Slot,
    column: int,
) -> None:
    """One value of one type: the model's every tick, the human's where it sent one."""
    name = slot["values"][column]
    predicted = trace.values[:, index, column]
    axis.plot(seconds, predicted, color="tab:blue", linewidth=0.8, label="model")
    mask = human.fires[:, index] & human.available[:, index, column]
    sent = human.values[mask, index, column]
    axis.scatter(seconds[mask], sent, s=6, color="tab:orange", label="human")
    axis.set_ylim(-1.1, 1.1)
    axis.set_ylabel(f"{slot['type']}.{name}", rotation=0, ha="right")
