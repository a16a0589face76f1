"""`rovertrain replay`: one recording through the rover runtime, as if the model had watched it.

The streaming path, tick by tick: every command the human sent before a tick is fed to
`RoverPolicy.observe_command`, the tick's frame (full size) to `RoverPolicy.tick`. Each tick
becomes a `prediction` event next to what the human sent in that window; the `replayed` event
sums it up per command type with the same metrics as the job's held-out evaluation
(`replay_figures`).

CHECKPOINT is an exported folder (onnxruntime) or a checkpoint folder (torch, same runtime
code around it). `--blind` replaces every frame with a constant grey picture and also runs
the sighted model, so the summary shows how much of the result came from the camera.
`--own-history`: the policy's own commands (`decision.send`) are fed back instead of the
person's, as on a rover it drives; the frames stay the recording's, and the summary's
`ownHistory` compares where each rover moved and stood (`own_history`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rovertrain.contracts.command_schema import POLICY, SLOTS, VALUES
from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import BLIND_GREY, STALE_FRAME_MS, TICK_MS
from rovertrain.data.recording import Command, Recording, load_recording, read_command_log
from rovertrain.deploy.own_history import own_history_figures, sent_roles
from rovertrain.deploy.replay_figures import replay_figures
from rovertrain.deploy.replay_trace import HumanLabels, HumanWindows, ReplayTrace
from rovertrain.protocol.events import EventStream
from rovertrain.protocol.progress import ProgressLine
from rovertrain.runtime.policy import MANIFEST_FILE, Decision, PolicyFileError, RoverPolicy
from rovertrain.sim.drivers import commands_from_decision
from rovertrain.video.decode_protocol import DecodeLimits

if TYPE_CHECKING:
    from rovertrain.deploy.overlay import OverlayWriter
    from rovertrain.deploy.stream import TickFrame
    from rovertrain.learn.policy import Policy


class TorchSession:
    """The onnxruntime `run` interface over the torch Policy (replay of a checkpoint)."""

    def __init__(self, model: Policy):
        self.model = model

    def run(
        self, output_names: list[str] | None, input_feed: dict[str, np.ndarray], /
    ) -> list[np.ndarray]:
        import torch

        with torch.inference_mode():
            logits, values = self.model(
                torch.from_numpy(input_feed["images"]), torch.from_numpy(input_feed["states"])
            )
        return [logits.numpy(), values.numpy()]


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy ready to tick, what runs it and which published model it is."""

    policy: RoverPolicy
    engine: str  # "onnxruntime" (an exported folder) or "torch" (a checkpoint folder)
    identity: JsonObject  # the model's id, name and createdAt

    def model_fields(self) -> dict[str, object]:
        """The `model` field of the `replayed` and `drove` events."""
        return {
            **self.identity,
            "engine": self.engine,
            **self.policy.spec.decision.runtime_json(),
        }


def load_policy(path_text: str) -> LoadedPolicy:
    """An exported folder (onnxruntime) or a checkpoint folder (torch), verified first."""
    path = Path(path_text).resolve()
    if (path / MANIFEST_FILE).is_file():
        try:
            policy = RoverPolicy.load(path)
        except PolicyFileError as error:
            raise RovertrainError(
                "invalid_checkpoint", f"The exported model at {path} does not verify.", str(error)
            ) from None
        return LoadedPolicy(policy, "onnxruntime", policy.spec.model.to_json())
    import torch

    from rovertrain.deploy.export import (
        decision_rules,
        load_checkpoint,
        policy_from_checkpoint,
        runtime_specification,
    )

    meta, weights = load_checkpoint(path)
    model = policy_from_checkpoint(path, meta, weights)  # refuses another policy version
    torch.set_num_threads(1)
    spec = runtime_specification(meta, decision_rules(meta))
    return LoadedPolicy(RoverPolicy(TorchSession(model), spec), "torch", spec.model.to_json())


def _limits(threads: int) -> DecodeLimits:
    return DecodeLimits(
        max_bytes=8 << 30, max_pixels=4096 * 4096, max_seconds=4 * 3600, threads=threads
    )


def _not_found(session_id: str, skip: SkipSession) -> RovertrainError:
    return RovertrainError("not_found", f"Session {session_id}: {skip.reason}", skip.code)


def open_session(root: Path, session_id: str) -> tuple[Recording, list[Command]]:
    """The recording and every command the human sent; `not_found` when it cannot be read."""
    if not root.is_dir():
        raise RovertrainError("root_unavailable", f"The data root {root} does not exist.")
    try:
        recording = load_recording(root, session_id)
        return recording, read_command_log(recording).commands
    except SkipSession as skip:
        raise _not_found(session_id, skip) from None


def session_ticks(recording: Recording, threads: int) -> Iterator[TickFrame]:
    """One full-size frame per 100 ms tick; `not_found` when the video cannot be decoded."""
    from rovertrain.deploy.stream import tick_frames

    try:
        yield from tick_frames(recording.video_path, recording.video_offset_ms, _limits(threads))
    except SkipSession as skip:
        raise _not_found(recording.session_id, skip) from None


class CommandFeed:
    """Hands every policy each command the human sent before a tick, once, in order."""

    def __init__(self, commands: Sequence[Command], policies: Sequence[RoverPolicy]):
        self.commands, self.policies = commands, policies
        self.position = 0

    def until(self, tick: int) -> None:
        while self.position < len(self.commands) and self.commands[self.position].t < tick:
            command = self.commands[self.position]
            for policy in self.policies:
                policy.observe_command(command.t, command.type, command.values)
            self.position += 1


class GreyFrames:
    """--blind: a constant grey picture the size of the camera's, made once per size."""

    def __init__(self) -> None:
        self.grey: np.ndarray | None = None

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        if self.grey is None or self.grey.shape != frame.shape:
            self.grey = np.full(frame.shape, BLIND_GREY, dtype=np.uint8)
        return self.grey


def decide(policy: RoverPolicy, item: TickFrame, frame: np.ndarray) -> Decision:
    policy.rotation = item.rotation
    return policy.tick(frame, item.tick)


def decision_arrays(policy: RoverPolicy, decision: Decision) -> tuple[np.ndarray, np.ndarray]:
    """(probability [SLOTS], values [SLOTS, VALUES]) of a decision, in slot order."""
    probability = np.zeros(SLOTS)
    values = np.zeros((SLOTS, VALUES), dtype=np.float32)
    for index, command_type in enumerate(policy.types):
        probability[index] = decision.probability[command_type]
        for column, name in enumerate(policy.value_names[index]):
            values[index, column] = decision.values[command_type][name]
    return probability, values


def prediction_types(
    policy: RoverPolicy, decision: Decision, sent: HumanWindows
) -> dict[str, dict[str, object]]:
    """The `prediction` event's `types`: per type the model's decision, and the human's
    command in this window (`sent`: one row)."""
    types: dict[str, dict[str, object]] = {}
    for index, command_type in enumerate(policy.types):
        entry: dict[str, object] = {
            "probability": decision.probability[command_type],
            "fire": decision.fire[command_type],
            "steer": decision.steer.get(command_type, False),
            "values": decision.values[command_type],
            "human": bool(sent.fires[0, index]),
        }
        if sent.fires[0, index]:
            entry["humanValues"] = {
                name: float(sent.values[0, index, column])
                for column, name in enumerate(policy.value_names[index])
                if sent.available[0, index, column]
            }
        types[command_type] = entry
    return types


class ReplayProgress:
    """How much of the drive is replayed and how fast, on one stderr line (a terminal's)."""

    def __init__(self, session_id: str, enabled: bool):
        self.session_id = session_id
        self.started = time.monotonic()
        self.line = ProgressLine(enabled, every_seconds=0.25, first_after_seconds=0.25)

    def text(self, ticks: int) -> str:
        seconds = ticks * TICK_MS / 1000
        speed = seconds / max(1e-6, time.monotonic() - self.started)
        return f"replay {self.session_id}: {seconds:7.1f} s of drive, {speed:5.1f}x realtime"

    def update(self, ticks: int) -> None:
        if self.line.ready():
            self.line.show(self.text(ticks))

    def finish(self, ticks: int) -> None:
        self.line.show(self.text(ticks))
        self.line.end()


@dataclass
class SessionReplay:
    """One session through the model, tick by tick: what each tick emits and keeps."""

    session_id: str
    loaded: LoadedPolicy
    sighted: RoverPolicy | None  # --blind: the same model on the camera, for the comparison
    human: HumanLabels
    stream: EventStream
    overlay: OverlayWriter | None
    trace: ReplayTrace
    sent: list[tuple[float, str]] | None = None  # --own-history: what the policy sent

    def tick(self, item: TickFrame, frame: np.ndarray) -> None:
        """`frame`: what the model sees (the camera's, or grey with --blind)."""
        policy = self.loaded.policy
        decision = decide(policy, item, frame)
        if self.sent is not None:
            self.send(decision, item.tick)
        row = self.human.row(item.tick)
        sent = self.human.gather(np.asarray([row]))
        # The windows training would use: a fresh frame, no unsupported command, and a
        # person's decision (not a window a policy drove uncorrected).
        usable = bool(
            item.tick - item.frame_time <= STALE_FRAME_MS
            and not sent.unsupported[0]
            and not sent.autonomous[0]
        )
        if self.sighted is not None:
            seen = decide(self.sighted, item, item.rgb)
            sighted = np.zeros(SLOTS)
            sighted[: len(policy.types)] = [seen.probability[t] for t in policy.types]
            self.trace.sighted.append(sighted)
        types = prediction_types(policy, decision, sent)
        self.stream.emit(
            "prediction", sessionId=self.session_id, t=item.tick, usable=usable, types=types
        )
        probability, values = decision_arrays(policy, decision)
        self.trace.add(item.tick, probability, values, usable, row)
        if self.overlay is not None:
            self.overlay.add(item.rgb, item.rotation, decision, sent.fires[0], sent.values[0])

    def send(self, decision: Decision, tick: int) -> None:
        """--own-history: what the rover would send now goes back into the policy, as on a
        rover it drives (the same rule as `drive`'s)."""
        policy, sent = self.loaded.policy, self.sent
        assert sent is not None
        for command in commands_from_decision(tick, policy.schema, decision.send, decision.values):
            policy.observe_command(command.t, command.type, command.values, by=POLICY)
            sent.append((command.t, command.type))


def open_overlay(out: str | None, loaded: LoadedPolicy) -> OverlayWriter | None:
    """--out: the folder, and overlay.mp4 written while replaying."""
    if out is None:
        return None
    from rovertrain.deploy.overlay import OverlayWriter

    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    policy = loaded.policy
    return OverlayWriter(directory / "overlay.mp4", policy.schema, policy.threshold)


def finish_files(replay: SessionReplay, overlay: OverlayWriter | None) -> dict[str, str]:
    """--out: timeline.png beside overlay.mp4; the `files` field of `replayed`."""
    if overlay is None:
        return {}
    from rovertrain.deploy.overlay import draw_timeline

    policy, arrays = replay.loaded.policy, replay.trace.arrays()
    timeline = overlay.path.parent / "timeline.png"
    sent = replay.human.gather(arrays.human)
    draw_timeline(timeline, arrays, sent, policy.schema, policy.threshold, replay.session_id)
    return {"timeline": str(timeline.resolve()), "overlay": str(overlay.path.resolve())}


def own_history_fields(
    policy: RoverPolicy,
    commands: Sequence[Command],
    sent: list[tuple[float, str]] | None,
    ticks: np.ndarray,
) -> dict[str, object]:
    """`unknownCommands` (the recording's commands of a type the model does not know: fed
    to it, or, with --own-history, never fed) and, with --own-history, `ownHistory`."""
    if sent is None:
        return {"unknownCommands": policy.unknown_commands}
    person = sent_roles([(command.t, command.type) for command in commands], policy.roles)
    policy_sent = sent_roles(sent, policy.roles)
    figures = own_history_figures(ticks, person, policy_sent, TICK_MS)
    unknown = sum(1 for command in commands if command.type not in policy.roles)
    return {"ownHistory": figures.to_json(), "unknownCommands": unknown}


def replay_session(
    checkpoint: str,
    root_text: str,
    session_id: str,
    out: str | None,
    blind: bool,
    threads: int,
    progress: bool,
    stream: EventStream,
    own_history: bool = False,
) -> int:
    started = time.monotonic()
    if blind and own_history:
        # --blind compares a grey-fed model with a sighted one fed the same person's history;
        # fed their own commands, their histories would differ and so would the question.
        raise RovertrainError(
            "usage", "--blind and --own-history replay in different ways: choose one."
        )

    # 1. The model; with --blind the same model a second time, to run on the camera.
    loaded = load_policy(checkpoint)
    sighted = load_policy(checkpoint).policy if blind else None
    policy = loaded.policy

    # 2. The session, and what the human sent on the 100 ms grid.
    recording, commands = open_session(Path(root_text).resolve(), session_id)
    human = HumanLabels(commands, policy.schema)

    # 3. Tick by tick: commands up to the tick, then the frame; a `prediction` per tick.
    overlay = open_overlay(out, loaded)
    sent: list[tuple[float, str]] | None = [] if own_history else None
    replay = SessionReplay(session_id, loaded, sighted, human, stream, overlay, ReplayTrace(), sent)
    # With --own-history no recorded command reaches the policy: it observes what it sends.
    fed = [policy] if sighted is None else [policy, sighted]
    feed = CommandFeed(commands, [] if own_history else fed)
    grey = GreyFrames() if blind else None
    view = ReplayProgress(session_id, progress)
    try:
        for item in session_ticks(recording, threads):
            feed.until(item.tick)
            replay.tick(item, item.rgb if grey is None else grey(item.rgb))
            view.update(len(replay.trace.ticks))
    finally:
        if overlay is not None:
            overlay.close()
    ticks = len(replay.trace.ticks)
    view.finish(ticks)

    # 4. The figures over the usable windows, the pictures, the summary event.
    arrays = replay.trace.arrays()
    figures = replay_figures(arrays, human, policy.schema, policy.threshold)
    own = own_history_fields(policy, commands, sent, arrays.ticks)
    files = finish_files(replay, overlay)
    elapsed = time.monotonic() - started
    stream.emit(
        "replayed",
        sessionId=session_id,
        model=loaded.model_fields(),
        ticks=ticks,
        blind=blind,
        **own,
        files=files,
        elapsedSeconds=round(elapsed, 3),
        realtimeFactor=round(ticks * TICK_MS / 1000 / max(elapsed, 1e-9), 2),
        **figures.to_json(),
    )
    return ExitCode.COMPLETED
