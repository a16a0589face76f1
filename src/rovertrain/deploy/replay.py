"""`rovertrain replay`: one recording through the rover runtime, as if the model had watched it.

The streaming path, tick by tick: every command the human sent before a tick is fed to
`RoverPolicy.observe_command`, the tick's frame (full size) to `RoverPolicy.tick`. Each tick
becomes a `prediction` event next to what the human sent in that window; the `replayed` event
sums it up per command type with the same metrics as the job's held-out evaluation (over the
windows training would use: frame not stale, no unsupported command), plus confusion counts,
mean value error and, for stop-role types, how early or late the model's stop came.

CHECKPOINT is an exported folder (onnxruntime) or a checkpoint folder (torch, same runtime
code around it). `--blind` replaces every frame with a constant grey picture and also runs
the sighted model, so the summary shows how much of the result came from the camera.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema, validate_schema
from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.contracts.observation import BLIND_GREY, STALE_FRAME_MS, TICK_MS
from rovertrain.data.decode_protocol import DecodeLimits
from rovertrain.data.recording import Command, load_recording, read_command_log
from rovertrain.data.windows import Labels, label_windows
from rovertrain.learn.metrics import event_metrics
from rovertrain.protocol.events import EventStream
from rovertrain.runtime.policy import MANIFEST_FILE, PolicyFileError, RoverPolicy

STOP_MATCH_MS = 2000
"""A predicted stop within this distance of a human stop onset counts as that stop."""


class TorchSession:
    """The onnxruntime `run` interface over the torch Policy (replay of a checkpoint)."""

    def __init__(self, model: Any):
        self.model = model

    def run(self, _names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import torch

        with torch.inference_mode():
            logits, values = self.model(
                torch.from_numpy(feeds["images"]), torch.from_numpy(feeds["states"])
            )
        return [logits.numpy(), values.numpy()]


def load_policy(path_text: str) -> tuple[RoverPolicy, str, dict[str, Any]]:
    """(policy, engine, model identity) from an exported folder or a checkpoint folder."""
    path = Path(path_text).resolve()
    if (path / MANIFEST_FILE).is_file():
        try:
            policy = RoverPolicy.load(path)
        except PolicyFileError as error:
            raise RovertrainError(
                "invalid_checkpoint", f"The exported model at {path} does not verify.", str(error)
            ) from None
        return policy, "onnxruntime", dict(policy.spec.get("model") or {})
    import torch
    from safetensors.torch import load as load_safetensors

    from rovertrain.deploy.export import decision_rules, load_checkpoint, runtime_specification
    from rovertrain.learn.policy import Policy

    meta, weights = load_checkpoint(path)
    model = Policy()
    model.load_state_dict(load_safetensors(weights), strict=True)
    model.eval()
    torch.set_num_threads(1)
    spec = runtime_specification(meta, *decision_rules(meta))
    return RoverPolicy(TorchSession(model), spec), "torch", dict(spec["model"])


@dataclass
class Trace:
    """Everything the replay saw, one row per tick."""

    ticks: list[int] = field(default_factory=list)
    probability: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    sighted: list[np.ndarray] = field(default_factory=list)  # --blind: the camera's run
    usable: list[bool] = field(default_factory=list)
    human: list[int] = field(default_factory=list)  # row in the label grid, -1: none

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "ticks": np.asarray(self.ticks, dtype=np.int64),
            "probability": np.asarray(self.probability, dtype=np.float64).reshape(-1, SLOTS),
            "values": np.asarray(self.values, dtype=np.float32).reshape(-1, SLOTS, VALUES),
            "usable": np.asarray(self.usable, dtype=bool),
            "human": np.asarray(self.human, dtype=np.int64),
        }


class HumanLabels:
    """What the human sent in each window, on a 100 ms grid covering every command."""

    def __init__(self, commands: list[Command], schema: Schema):
        times = [command.t for command in commands] or [0.0]
        self.first = math.floor(min(0.0, min(times)) / TICK_MS) * TICK_MS
        last = math.floor(max(times) / TICK_MS) * TICK_MS
        grid = np.arange(self.first, last + TICK_MS, TICK_MS, dtype=np.int64)
        self.labels: Labels = label_windows(grid, commands, schema)
        self.count = len(grid)

    def row(self, tick: int) -> int:
        index = (tick - self.first) // TICK_MS
        return int(index) if 0 <= index < self.count else -1

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(fires, values, available, unsupported) for grid rows (-1: nothing sent)."""
        count = len(rows)
        fires = np.zeros((count, SLOTS), dtype=bool)
        values = np.zeros((count, SLOTS, VALUES), dtype=np.float32)
        available = np.zeros((count, SLOTS, VALUES), dtype=bool)
        unsupported = np.zeros(count, dtype=bool)
        inside = rows >= 0
        picked = rows[inside]
        fires[inside] = self.labels.fires[picked].astype(bool)
        values[inside] = self.labels.values[picked]
        available[inside] = self.labels.available[picked].astype(bool)
        unsupported[inside] = self.labels.unsupported[picked]
        return fires, values, available, unsupported


def type_summary(
    schema: Schema,
    predicted: np.ndarray,
    predicted_values: np.ndarray,
    fires: np.ndarray,
    values: np.ndarray,
    available: np.ndarray,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per type: confusion counts and the evaluator's metrics; and the overall score."""
    metrics = event_metrics(
        predicted, predicted_values, fires, values, available, schema, np.zeros(SLOTS)
    )
    types: dict[str, Any] = {}
    for index, slot in enumerate(schema):
        p, a = predicted[:, index], fires[:, index]
        mask = available[:, index] & a[:, None]
        error = np.abs(predicted_values[:, index] - values[:, index])[mask]
        row = metrics.per_slot[index]
        types[slot["type"]] = {
            "role": slot["role"],
            "truePositive": int((p & a).sum()),
            "falsePositive": int((p & ~a).sum()),
            "falseNegative": int((~p & a).sum()),
            "trueNegative": int((~p & ~a).sum()),
            "precision": row.score.precision,
            "recall": row.score.recall,
            "f1": row.score.f1,
            "numericMse": row.numeric_mse,
            "meanAbsValueError": float(error.mean()) if error.size else None,
        }
    overall = {
        "windows": metrics.windows,
        "precision": metrics.precision,
        "recall": metrics.recall,
        "f1": metrics.f1,
        "numericMse": metrics.numeric_mse,
        "stopRecall": metrics.stop_recall,
        "movementRecall": metrics.movement_recall,
    }
    return types, overall


def stop_timing(
    schema: Schema, ticks: np.ndarray, predicted: np.ndarray, fires: np.ndarray
) -> dict[str, Any]:
    """For each human stop onset, the nearest predicted stop within ±2 s: + late, - early."""
    stops = [index for index, slot in enumerate(schema) if slot["role"] == "stop"]
    if not stops or not len(ticks):
        return {"onsets": 0, "matched": 0, "matchWindowMs": STOP_MATCH_MS}
    human: np.ndarray = np.asarray(fires[:, stops].any(axis=1))
    model: np.ndarray = np.asarray(predicted[:, stops].any(axis=1))
    onsets = ticks[human & ~np.concatenate([[False], human[:-1]])]
    fired = ticks[model]
    offsets = []
    for onset in onsets:
        if len(fired):
            nearest = fired[np.argmin(np.abs(fired - onset))]
            if abs(nearest - onset) <= STOP_MATCH_MS:
                offsets.append(float(nearest - onset))
    result: dict[str, Any] = {
        "onsets": len(onsets),
        "matched": len(offsets),
        "missed": len(onsets) - len(offsets),
        "matchWindowMs": STOP_MATCH_MS,
    }
    if offsets:
        result.update(
            medianOffsetMs=float(np.median(offsets)),
            meanOffsetMs=float(np.mean(offsets)),
            earlyStops=sum(offset < 0 for offset in offsets),
            lateStops=sum(offset > 0 for offset in offsets),
        )
    return result


def _limits(threads: int) -> DecodeLimits:
    return DecodeLimits(
        max_bytes=8 << 30, max_pixels=4096 * 4096, max_seconds=4 * 3600, threads=threads
    )


class Progress:
    def __init__(self, session_id: str, enabled: bool):
        self.session_id, self.enabled = session_id, enabled
        self.started = self.shown = time.monotonic()

    def update(self, ticks: int, final: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.shown < 0.25 and not final):
            return
        self.shown = now
        seconds = ticks * TICK_MS / 1000
        speed = seconds / max(1e-6, now - self.started)
        end = "\n" if final else ""
        sys.stderr.write(
            f"\rreplay {self.session_id}: {seconds:7.1f} s of drive, {speed:5.1f}x realtime{end}"
        )
        sys.stderr.flush()


def replay_session(
    checkpoint: str,
    root_text: str,
    session_id: str,
    out: str | None,
    blind: bool,
    threads: int,
    progress: bool,
    stream: EventStream,
) -> int:
    started = time.monotonic()
    policy, engine, identity = load_policy(checkpoint)
    sighted_policy = load_policy(checkpoint)[0] if blind else None
    schema: Schema = validate_schema(policy.schema)
    root = Path(root_text).resolve()
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    try:
        recording = load_recording(root, session_id)
        commands = read_command_log(recording).commands
    except SkipSession as skip:
        raise RovertrainError(
            "not_found", f"Session {session_id}: {skip.reason}", skip.code
        ) from None
    human = HumanLabels(commands, schema)
    trace = Trace()
    writer = None
    if out is not None:
        from rovertrain.deploy.overlay import OverlayWriter

        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        writer = OverlayWriter(directory / "overlay.mp4", schema, policy.threshold)
    view = Progress(session_id, progress)
    position = 0
    grey: np.ndarray | None = None
    from rovertrain.deploy.stream import tick_frames

    try:
        for item in tick_frames(recording.video_path, recording.video_offset_ms, _limits(threads)):
            while position < len(commands) and commands[position].t < item.tick:
                command = commands[position]
                policy.observe_command(command.t, command.type, command.values)
                if sighted_policy is not None:
                    sighted_policy.observe_command(command.t, command.type, command.values)
                position += 1
            frame = item.rgb
            if blind:
                if grey is None or grey.shape != frame.shape:
                    grey = np.full(frame.shape, BLIND_GREY, dtype=np.uint8)
                frame = grey
            policy.rotation = item.rotation
            decision = policy.tick(frame, item.tick)
            row = human.row(item.tick)
            fires, values, available, unsupported = human.gather(np.asarray([row]))
            usable = bool(item.tick - item.frame_time <= STALE_FRAME_MS and not unsupported[0])
            probability = np.zeros(SLOTS)
            predicted_values = np.zeros((SLOTS, VALUES), dtype=np.float32)
            types: dict[str, Any] = {}
            for index, command_type in enumerate(policy.types):
                names = policy.value_names[index]
                probability[index] = decision.probability[command_type]
                for column, name in enumerate(names):
                    predicted_values[index, column] = decision.values[command_type][name]
                entry: dict[str, Any] = {
                    "probability": decision.probability[command_type],
                    "fire": decision.fire[command_type],
                    "steer": decision.steer.get(command_type, False),
                    "values": decision.values[command_type],
                    "human": bool(fires[0, index]),
                }
                if fires[0, index]:
                    entry["humanValues"] = {
                        name: float(values[0, index, column])
                        for column, name in enumerate(names)
                        if available[0, index, column]
                    }
                types[command_type] = entry
            if sighted_policy is not None:
                sighted_policy.rotation = item.rotation
                seen = sighted_policy.tick(item.rgb, item.tick)
                sighted = np.zeros(SLOTS)
                sighted[: len(policy.types)] = [seen.probability[t] for t in policy.types]
                trace.sighted.append(sighted)
            stream.emit("prediction", sessionId=session_id, t=item.tick, usable=usable, types=types)
            trace.ticks.append(item.tick)
            trace.probability.append(probability)
            trace.values.append(predicted_values)
            trace.usable.append(usable)
            trace.human.append(row)
            if writer is not None:
                writer.add(item.rgb, item.rotation, decision, fires[0], values[0])
            view.update(len(trace.ticks))
    except SkipSession as skip:
        raise RovertrainError(
            "not_found", f"Session {session_id}: {skip.reason}", skip.code
        ) from None
    finally:
        if writer is not None:
            writer.close()
    view.update(len(trace.ticks), final=True)
    summary = summarise(trace, human, schema, policy.threshold)
    files: dict[str, str] = {}
    if out is not None and writer is not None:
        from rovertrain.deploy.overlay import draw_timeline

        timeline = Path(out) / "timeline.png"
        draw_timeline(timeline, trace.arrays(), human, schema, policy.threshold, session_id)
        files = {"timeline": str(timeline.resolve()), "overlay": str(writer.path.resolve())}
    if sighted_policy is not None and trace.sighted:
        summary["camera"] = camera_share(trace, human, schema, policy.threshold, summary)
    elapsed = time.monotonic() - started
    seconds = len(trace.ticks) * TICK_MS / 1000
    stream.emit(
        "replayed",
        sessionId=session_id,
        model={
            **identity,
            "engine": engine,
            "threshold": policy.threshold,
            "steeringDeadband": policy.steering_deadband,
        },
        ticks=len(trace.ticks),
        blind=blind,
        unknownCommands=policy.unknown_commands,
        files=files,
        elapsedSeconds=round(elapsed, 3),
        realtimeFactor=round(seconds / max(elapsed, 1e-9), 2),
        **summary,
    )
    return ExitCode.COMPLETED


def summarise(trace: Trace, human: HumanLabels, schema: Schema, threshold: float) -> dict[str, Any]:
    data = trace.arrays()
    usable = data["usable"]
    fires, values, available, _ = human.gather(data["human"][usable])
    predicted = data["probability"][usable] >= threshold
    types, overall = type_summary(
        schema, predicted, data["values"][usable], fires, values, available
    )
    overall["usableWindows"] = int(usable.sum())
    return {
        "types": types,
        "overall": overall,
        "stops": stop_timing(schema, data["ticks"][usable], predicted, fires),
    }


def camera_share(
    trace: Trace, human: HumanLabels, schema: Schema, threshold: float, blind: dict[str, Any]
) -> dict[str, Any]:
    """The sighted model's F1 per type next to the blind one's: the camera's contribution."""
    data = trace.arrays()
    usable = data["usable"]
    fires, values, available, _ = human.gather(data["human"][usable])
    sighted = np.asarray(trace.sighted).reshape(-1, SLOTS)[usable] >= threshold
    types, overall = type_summary(schema, sighted, data["values"][usable], fires, values, available)
    return {
        "sightedF1": overall["f1"],
        "blindF1": blind["overall"]["f1"],
        "f1FromCamera": overall["f1"] - blind["overall"]["f1"],
        "perType": {
            name: {"sightedF1": row["f1"], "blindF1": blind["types"][name]["f1"]}
            for name, row in types.items()
        },
    }
