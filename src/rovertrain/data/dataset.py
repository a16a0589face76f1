"""Sessions in, sampled windows out: decode (cached, isolated), label, sample, gather.

Sessions are decoded in parallel but processed strictly in the given order, so the schema
grows and samples are drawn exactly as in a sequential run: same job, data and seed give the
same partition, samples and schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rovertrain.data import cache
from rovertrain.data.command_schema import SLOTS, VALUES, Schema, extended
from rovertrain.data.decode import DecodeLimits
from rovertrain.data.decoder_pool import DecoderPool
from rovertrain.data.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STALE_FRAME_MS,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data.partition import is_held_out, partition_name
from rovertrain.data.recording import Recording, load_recording, read_command_log
from rovertrain.data.sampling import (
    category_capacity,
    per_session_capacity,
    sample_windows,
    session_rng,
)
from rovertrain.data.windows import Labels, label_windows, summary
from rovertrain.errors import SkipSession
from rovertrain.job.config import Config
from rovertrain.protocol.events import EventStream


@dataclass
class WindowSet:
    """Windows stored compactly: uint8 frames and contiguous label arrays."""

    frames: np.ndarray
    states: np.ndarray
    fires: np.ndarray
    values: np.ndarray
    available: np.ndarray
    category: np.ndarray

    def __len__(self) -> int:
        return len(self.category)

    def nbytes(self) -> int:
        return sum(
            array.nbytes
            for array in (self.frames, self.states, self.fires, self.values, self.available)
        )

    def subset(self, indices: np.ndarray) -> WindowSet:
        return WindowSet(
            self.frames[indices], self.states[indices], self.fires[indices],
            self.values[indices], self.available[indices], self.category[indices],
        )  # fmt: skip


class WindowSetBuilder:
    def __init__(self, capacity: int):
        self.count = 0
        self.frames = np.empty((capacity, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS), dtype=np.uint8)
        self.states = np.empty((capacity, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32)
        self.fires = np.empty((capacity, SLOTS), dtype=np.uint8)
        self.values = np.empty((capacity, SLOTS, VALUES), dtype=np.float32)
        self.available = np.empty((capacity, SLOTS, VALUES), dtype=np.uint8)
        self.category = np.empty(capacity, dtype=np.int8)

    def add(self, frames: np.ndarray, labels: Labels, indices: list[int]) -> None:
        chosen = np.asarray(indices, dtype=np.int64)
        end = self.count + len(chosen)
        if end > len(self.category):
            raise ValueError("window set capacity exceeded")
        window = slice(self.count, end)
        self.frames[window] = frames[chosen]
        self.states[window] = labels.states[chosen]
        self.fires[window] = labels.fires[chosen]
        self.values[window] = labels.values[chosen]
        self.available[window] = labels.available[chosen]
        self.category[window] = labels.category[chosen]
        self.count = end

    def build(self) -> WindowSet:
        n = self.count
        return WindowSet(
            self.frames[:n], self.states[:n], self.fires[:n], self.values[:n],
            self.available[:n], self.category[:n],
        )  # fmt: skip


@dataclass
class Dataset:
    schema: Schema
    pool: WindowSet
    validation: WindowSet
    accepted: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    trained_rovers: set[str] = field(default_factory=set)
    control_profiles: list[str] = field(default_factory=list)
    observed_windows: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    decode_seconds: float = 0.0


@dataclass
class DatasetRequest:
    root: Path
    sessions: list[str]
    schema: Schema
    config: Config
    seed: int
    keep_windows: bool = True


def _limits(config: Config) -> DecodeLimits:
    return DecodeLimits(
        max_bytes=config.maxVideoMegabytes * 2**20,
        max_pixels=config.maxFramePixels,
        max_seconds=config.maxVideoMinutes * 60,
        threads=1,
    )


def build_dataset(
    request: DatasetRequest,
    stream: EventStream,
    should_stop: Callable[[], bool],
    is_paused: Callable[[], bool] = lambda: False,
    on_activity: Callable[[dict[str, int]], None] = lambda decoding: None,
) -> Dataset:
    import time

    started = time.monotonic()
    sessions = request.sessions
    per_session = per_session_capacity(request.config.maxSamples, len(sessions))
    training_count = sum(not is_held_out(session_id) for session_id in sessions)
    held_count = len(sessions) - training_count
    keep = request.keep_windows
    train_builder = WindowSetBuilder(
        training_count * 3 * category_capacity(per_session) if keep else 0
    )
    held_builder = WindowSetBuilder(held_count * per_session if keep else 0)
    dataset = Dataset(
        schema=request.schema, pool=train_builder.build(), validation=held_builder.build()
    )

    recordings: dict[str, Recording] = {}
    entries: dict[str, cache.CacheEntry] = {}
    ready: dict[str, Any] = {}  # sessionId -> CachedFrames or SkipSession
    decode_requests = []
    cache.cache_dir(request.root).mkdir(parents=True, exist_ok=True)
    cache.remove_temporaries(request.root)
    limits = _limits(request.config)
    for session_id in sessions:
        try:
            recording = load_recording(request.root, session_id)
            entry = cache.entry_for(request.root, recording)
        except SkipSession as skip:
            ready[session_id] = skip
            continue
        except OSError as error:
            ready[session_id] = SkipSession("invalid_recording", f"cannot read: {error}")
            continue
        recordings[session_id] = recording
        entries[session_id] = entry
        hit = cache.load(entry)
        if hit is not None:
            hit.stats["cached"] = True
            ready[session_id] = hit
            continue
        decode_requests.append(
            {
                "sessionId": session_id,
                "videoPath": str(recording.video_path),
                "offsetMs": recording.video_offset_ms,
                "framesPath": str(entry.frames_path),
                "metaPath": str(entry.meta_path),
                "name": entry.name,
                "key": entry.key,
                "limits": dict(limits.__dict__),
                "nice": 0,
            }
        )

    pool = DecoderPool(
        threads=request.config.threads,
        timeout_seconds=request.config.decodeTimeoutSeconds,
        should_stop=should_stop,
        is_paused=is_paused,
        on_tick=on_activity,
    )
    results = pool.run(decode_requests)
    position = 0
    while position < len(sessions):
        session_id = sessions[position]
        while session_id not in ready:
            try:
                finished, outcome = next(results)
            except StopIteration:
                break
            if outcome[0] == "ok":
                loaded = cache.load(entries[finished])
                ready[finished] = loaded or SkipSession(
                    "decode_error", "the decoder's output could not be read back"
                )
                if loaded is not None:
                    loaded.stats["cached"] = False
            else:
                ready[finished] = SkipSession(outcome[1], outcome[2])
        if session_id not in ready or should_stop():
            dataset.stopped = True
            break
        _process_session(
            request, dataset, session_id, recordings.get(session_id), ready.pop(session_id),
            per_session, train_builder, held_builder, stream,
        )  # fmt: skip
        position += 1
    results.close()  # stops any decoder still running (the pool's finally)
    dataset.pool = train_builder.build()
    dataset.validation = held_builder.build()
    dataset.decode_seconds = round(time.monotonic() - started, 3)
    cache.evict(
        request.root,
        request.config.cacheMaxMegabytes * 2**20,
        keep={entry.name for entry in entries.values()},
    )
    return dataset


def _process_session(
    request: DatasetRequest,
    dataset: Dataset,
    session_id: str,
    recording: Recording | None,
    outcome: Any,
    per_session: int,
    train_builder: WindowSetBuilder,
    held_builder: WindowSetBuilder,
    stream: EventStream,
) -> None:
    held_out = is_held_out(session_id)
    partition = partition_name(session_id)
    try:
        if isinstance(outcome, SkipSession):
            raise outcome
        assert recording is not None
        log = read_command_log(recording)
        schema = dataset.schema
        if not held_out:
            schema = extended(
                schema, ((c.type, c.values) for c in log.commands), recording.command_roles
            )
        labels = label_windows(outcome.ticks, log.commands, schema)
        stale = (outcome.ticks - outcome.frame_times) > STALE_FRAME_MS
        usable_mask = ~stale & ~labels.unsupported
        usable = np.flatnonzero(usable_mask).tolist()
        if not usable:
            raise SkipSession("no_windows", "no usable window: no frame near any 100 ms tick")
    except SkipSession as skip:
        dataset.rejected[session_id] = skip.reason
        stream.emit(
            "skipped", sessionId=session_id, code=skip.code, reason=skip.reason, partition=partition
        )
        return
    indices: list[int] = []
    if request.keep_windows:
        rng = session_rng(request.seed, session_id)
        categories = labels.category.tolist()
        indices = sample_windows(usable, categories, held_out, per_session, rng)
        (held_builder if held_out else train_builder).add(outcome.frames, labels, indices)
    if not held_out:
        dataset.schema = schema
        dataset.trained_rovers.add(recording.rover_id)
        profile = recording.control_profile
        if profile is not None and profile not in dataset.control_profiles:
            dataset.control_profiles.append(profile)
    dataset.accepted.append(session_id)
    dataset.observed_windows[session_id] = len(labels.category)
    diagnostics = {
        **outcome.stats,
        **summary(labels),
        "windows": len(labels.category),
        "usableWindows": len(usable),
        "invalidCommandLines": log.invalid_lines,
        "clippedCommandValues": log.clipped_values,
        "commands": len(log.commands),
        "partition": partition,
        "sampledWindows": len(indices),
        "roverId": recording.rover_id,
        "controlProfile": recording.control_profile,
    }
    dataset.rows.append({"sessionId": session_id, **diagnostics})
    stream.emit(
        "dataset",
        sessionId=session_id,
        windows=len(labels.category),
        sampled=len(indices),
        partition=partition,
        diagnostics=diagnostics,
    )
