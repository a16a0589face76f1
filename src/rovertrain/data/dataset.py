"""Sessions in, sampled windows out: decode (cached, isolated), label, sample, gather.

Sessions are decoded in parallel but processed strictly in the given order, so the schema
grows and samples are drawn exactly as in a sequential run: same job, data and seed give the
same partition, samples and schema.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES, Schema, extended
from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.observation import (
    OBS_CHANNELS,
    OBS_HEIGHT,
    OBS_WIDTH,
    STALE_FRAME_MS,
    STATE_FEATURES_PER_SLOT,
)
from rovertrain.data import cache
from rovertrain.data.cache import CachedFrames
from rovertrain.data.decode_protocol import DecodeDone, DecodeLimits, DecodeRequest, Outcome
from rovertrain.data.decoder_pool import DecoderPool
from rovertrain.data.field import UNKNOWN_MODEL, FieldFigures, pooled
from rovertrain.data.manifest import ManifestRow, command_types_json, fingerprint
from rovertrain.data.partition import Partition, is_held_out, partition_of
from rovertrain.data.recording import Recording, load_recording, read_command_log
from rovertrain.data.sampling import (
    category_capacity,
    per_session_capacity,
    sample_windows,
    selection_capacity,
    session_rng,
    split_tail,
    with_corrections_repeated,
)
from rovertrain.data.settings import Decoding, Sampling
from rovertrain.data.store import StoreSurvey, StoreUpdate, survey_store
from rovertrain.data.windows import (
    Labels,
    LabelSummary,
    label_windows,
    summary,
    supervised_windows,
)
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
    session: np.ndarray  # int32: which session each window came from (0, 1, ... as added)

    def __len__(self) -> int:
        return len(self.category)

    def nbytes(self) -> int:
        return sum(
            array.nbytes
            for array in (self.frames, self.states, self.fires, self.values, self.available)
        )

    def subset(self, indices: np.ndarray | slice) -> WindowSet:
        return WindowSet(
            frames=self.frames[indices],
            states=self.states[indices],
            fires=self.fires[indices],
            values=self.values[indices],
            available=self.available[indices],
            category=self.category[indices],
            session=self.session[indices],
        )


class WindowSetBuilder:
    def __init__(self, capacity: int):
        self.count = 0
        self.frames = np.empty((capacity, OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS), dtype=np.uint8)
        self.states = np.empty((capacity, SLOTS * STATE_FEATURES_PER_SLOT), dtype=np.float32)
        self.fires = np.empty((capacity, SLOTS), dtype=np.uint8)
        self.values = np.empty((capacity, SLOTS, VALUES), dtype=np.float32)
        self.available = np.empty((capacity, SLOTS, VALUES), dtype=np.uint8)
        self.category = np.empty(capacity, dtype=np.int8)
        self.session = np.empty(capacity, dtype=np.int32)
        self.sessions = 0

    def add(self, frames: np.ndarray, labels: Labels, indices: list[int]) -> None:
        """One session's chosen windows (each call is a new session)."""
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
        self.session[window] = self.sessions
        self.sessions += 1
        self.count = end

    def build(self) -> WindowSet:
        return WindowSet(
            frames=self.frames,
            states=self.states,
            fires=self.fires,
            values=self.values,
            available=self.available,
            category=self.category,
            session=self.session,
        ).subset(slice(0, self.count))


@dataclass(frozen=True)
class SessionResult:
    """An accepted session's figures: the `dataset` event's diagnostics, typed."""

    session_id: str
    partition: Partition
    decode: dict[str, Any]  # the decoder's diagnostics, as stored in the cache (JSON)
    labels: LabelSummary
    windows: int
    usable_windows: int
    invalid_command_lines: int
    dropped_command_lines: dict[str, int]
    clipped_command_values: int
    commands: int
    sampled_windows: int
    selection_windows: int
    rover_id: str
    control_profile: str | None
    driven_by: str | None = None  # session.json drivenBy.model

    def field_figures(self) -> FieldFigures | None:
        """How a policy drove this session under supervision (None: a person drove it all)."""
        return field_figures_of(self.labels)

    def diagnostics(self) -> dict[str, Any]:
        return {
            **self.decode,
            **self.labels.to_json(),
            "windows": self.windows,
            "usableWindows": self.usable_windows,
            "invalidCommandLines": self.invalid_command_lines,
            "droppedCommandLines": self.dropped_command_lines,
            "clippedCommandValues": self.clipped_command_values,
            "commands": self.commands,
            "partition": self.partition,
            "sampledWindows": self.sampled_windows,
            "selectionWindows": self.selection_windows,
            "roverId": self.rover_id,
            "controlProfile": self.control_profile,
        }

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, **self.diagnostics()}


def field_figures_of(labels: LabelSummary) -> FieldFigures | None:
    """A session's field figures from its labels (None: a person drove it all)."""
    if not labels.supervised_windows and not labels.take_overs:
        return None
    return FieldFigures.of_windows(
        labels.supervised_windows, labels.autonomous_windows, labels.take_overs
    )


class PolicyDroveAll(SkipSession):
    """A session a policy drove throughout: nothing to imitate (skipped, `no_windows`), but
    its autonomous minutes are field evidence for the model that drove (`field_by_model`)."""

    def __init__(self, driven_by: str | None, figures: FieldFigures | None, labelled: _Labelled):
        super().__init__("no_windows", "no usable window: a policy drove every window")
        self.driven_by, self.figures, self.labelled = driven_by, figures, labelled


@dataclass
class Dataset:
    schema: Schema
    pool: WindowSet  # training windows
    validation: WindowSet  # held-out sessions: the gate's
    selection: WindowSet  # the tails of the training sessions: weight selection, patience
    accepted: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    sessions: list[SessionResult] = field(default_factory=list)
    trained_rovers: set[str] = field(default_factory=set)
    control_profiles: list[str] = field(default_factory=list)
    observed_windows: dict[str, int] = field(default_factory=dict)
    decode_seconds: float = 0.0
    autonomous_only: list[tuple[str | None, FieldFigures]] = field(default_factory=list)
    unread: list[ManifestRow] = field(default_factory=list)  # stored sessions not read
    store: StoreUpdate | None = None  # what the job adds to the store (`commit_store`)
    schema_sources: set[tuple[str, str]] = field(default_factory=set)  # rows' types, applied

    def of_partition(self, partition: Partition) -> list[SessionResult]:
        return [result for result in self.sessions if result.partition is partition]

    def natural_command_counts(self) -> tuple[int, np.ndarray]:
        """Usable training windows and command events per slot, before any sampling."""
        training = self.of_partition(Partition.TRAINING)
        counts = np.zeros(SLOTS)
        for result in training:
            counts += np.asarray(result.labels.command_event_counts, dtype=np.float64)
        return sum(result.usable_windows for result in training), counts

    def rows(self) -> list[dict[str, Any]]:
        return [result.to_json() for result in self.sessions]

    def field_by_model(self) -> dict[str, FieldFigures]:
        """Field figures of the supervised sessions, pooled per model that drove them
        (session.json `drivenBy`; UNKNOWN_MODEL where a recording does not say)."""
        grouped: dict[str, list[FieldFigures]] = {}
        accepted = [(result.driven_by, result.field_figures()) for result in self.sessions]
        unread = [(row.driven_by, row.field_figures()) for row in self.unread]
        for model, figures in [*accepted, *self.autonomous_only, *unread]:
            if figures is not None:
                grouped.setdefault(model or UNKNOWN_MODEL, []).append(figures)
        return {model: pooled(sessions) for model, sessions in sorted(grouped.items())}


@dataclass(frozen=True)
class DecodedByRanks:
    """Sessions the job's ranks decoded into the cache before the dataset is built (distributed
    runs): which ones, and the (code, reason) of those that failed, which the cache lacks."""

    sessions: frozenset[str] = frozenset()
    failures: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class DatasetRequest:
    root: Path
    sessions: list[str]
    schema: Schema
    seed: int
    threads: int  # the job's busy-thread budget, shared by the decoder children
    decoding: Decoding
    sampling: Sampling
    keep_windows: bool = True
    decoded: DecodedByRanks = field(default_factory=DecodedByRanks)
    maintains_cache: bool = True  # removes temporaries and evicts: one rank only


class DecodeWatcher(Protocol):
    """The job's side of decoding: stop and pause requests, and who is decoding what."""

    def should_stop(self) -> bool: ...
    def poll_pause(self) -> bool: ...
    def show_decoding(self, decoding: dict[str, int]) -> None: ...


class Unwatched:
    """Decoding with nobody to stop or pause it (`inspect`)."""

    def should_stop(self) -> bool:
        return False

    def poll_pause(self) -> bool:
        return False

    def show_decoding(self, decoding: dict[str, int]) -> None:
        pass


def _limits(decoding: Decoding) -> DecodeLimits:
    return DecodeLimits(
        max_bytes=decoding.maxVideoMegabytes * 2**20,
        max_pixels=decoding.maxFramePixels,
        max_seconds=decoding.maxVideoMinutes * 60,
        threads=1,
    )


Ready = CachedFrames | SkipSession


@dataclass
class _Plan:
    """Each session's recording and cache entry, what is ready, and what must be decoded."""

    recordings: dict[str, Recording] = field(default_factory=dict)
    entries: dict[str, cache.CacheEntry] = field(default_factory=dict)
    ready: dict[str, Ready] = field(default_factory=dict)
    decode: list[DecodeRequest] = field(default_factory=list)


def _plan(request: DatasetRequest, read: frozenset[str]) -> _Plan:
    """The sessions to read, in the given order: their recordings, entries and cache hits."""
    plan = _Plan()
    limits = _limits(request.decoding)
    for session_id in request.sessions:
        if session_id not in read:
            continue
        failure = request.decoded.failures.get(session_id)
        if failure is not None:
            plan.ready[session_id] = SkipSession(*failure)
            continue
        try:
            recording = load_recording(request.root, session_id)
            entry = cache.entry_for(request.root, recording)
        except SkipSession as skip:
            plan.ready[session_id] = skip
            continue
        except OSError as error:
            plan.ready[session_id] = SkipSession("invalid_recording", f"cannot read: {error}")
            continue
        except Exception as error:  # defence in depth: one session never ends the job
            plan.ready[session_id] = _internal_skip(error)
            continue
        plan.recordings[session_id] = recording
        plan.entries[session_id] = entry
        started = time.monotonic()
        hit = cache.load(entry)
        if hit is not None:
            hit.stats["cached"] = session_id not in request.decoded.sessions
            hit.stats["cacheLoadSeconds"] = round(time.monotonic() - started, 4)
            plan.ready[session_id] = hit
            continue
        plan.decode.append(
            DecodeRequest(
                session_id=session_id,
                video_path=recording.video_path,
                offset_ms=recording.video_offset_ms,
                frames_path=entry.frames_path,
                meta_path=entry.meta_path,
                name=entry.name,
                key=entry.key,
                limits=limits,
            )
        )
    return plan


def _internal_skip(error: Exception) -> SkipSession:
    detail = "".join(traceback.format_exception(error))[-4000:]
    reason = f"unexpected {type(error).__name__} while reading the session: {str(error)[:300]}"
    return SkipSession("session_internal", reason, detail)


def _read_back(entry: cache.CacheEntry, outcome: Outcome) -> Ready:
    if not isinstance(outcome, DecodeDone):
        return SkipSession(outcome.code, outcome.reason)
    loaded = cache.load(entry)
    if loaded is None:
        return SkipSession("decode_error", "the decoder's output could not be read back")
    loaded.stats["cached"] = False
    return loaded


def survey(request: DatasetRequest) -> StoreSurvey:
    """The store as this job finds it and what it reads; `inspect` (no windows kept) reads
    every session it is given."""
    sampling = request.sampling
    limits = (sampling.sessionsPerJob, sampling.heldOutSessions) if request.keep_windows else None
    return survey_store(request.root, request.sessions, limits, request.seed)


def build_dataset(request: DatasetRequest, stream: EventStream, watcher: DecodeWatcher) -> Dataset:
    """Decode in parallel, then label and sample strictly in the given order; sessions the
    store holds and the reading plan leaves out count from their manifest rows."""
    started = time.monotonic()
    found = survey(request)
    reading = found.reading
    sampled = [session_id for session_id in request.sessions if session_id in reading.sampled]
    per_session = per_session_capacity(request.sampling.maxSamples, len(sampled))
    training_count = sum(not is_held_out(session_id) for session_id in sampled)
    held_count = len(sampled) - training_count
    keep = request.keep_windows
    fraction = request.sampling.selectionFraction
    builders = _Builders(
        training=WindowSetBuilder(
            training_count * 3 * category_capacity(per_session) if keep else 0
        ),
        held_out=WindowSetBuilder(held_count * per_session if keep else 0),
        selection=WindowSetBuilder(
            training_count * selection_capacity(per_session, fraction) if keep else 0
        ),
    )
    dataset = Dataset(
        schema=request.schema,
        pool=builders.training.build(),
        validation=builders.held_out.build(),
        selection=builders.selection.build(),
        store=StoreUpdate(found),
    )
    cache.cache_dir(request.root).mkdir(parents=True, exist_ok=True)
    if request.maintains_cache:
        cache.remove_temporaries(request.root)
    plan = _plan(request, reading.read)
    pool = _decoder_pool(request, watcher)
    results = pool.run(plan.decode)
    for session_id in request.sessions:
        if session_id not in reading.read:
            _count_unread(dataset, found.known[session_id])
            continue
        if not _wait_until_ready(session_id, plan, results) or watcher.should_stop():
            break
        recording, entry = plan.recordings.get(session_id), plan.entries.get(session_id)
        session = _Session(session_id, recording, entry, plan.ready.pop(session_id))
        quota = per_session if session_id in reading.sampled else 0
        _process_session(request, dataset, session, quota, builders, stream)
    results.close()  # stops any decoder still running (the pool's finally)
    dataset.pool = builders.training.build()
    dataset.validation = builders.held_out.build()
    dataset.selection = builders.selection.build()
    dataset.decode_seconds = round(time.monotonic() - started, 3)
    return dataset


def _count_unread(dataset: Dataset, row: ManifestRow) -> None:
    """A stored session this job does not read still grows the schema (as its log would),
    names its rover and profile, and brings its field figures."""
    dataset.unread.append(row)
    if row.held_out:
        return
    if (row.command_types, row.command_roles) not in dataset.schema_sources:
        dataset.schema_sources.add((row.command_types, row.command_roles))
        dataset.schema = row.extend(dataset.schema)  # the same types again change nothing
    dataset.trained_rovers.add(row.rover_id)
    profile = row.control_profile
    if profile is not None and profile not in dataset.control_profiles:
        dataset.control_profiles.append(profile)


def uncached_sessions(request: DatasetRequest) -> list[tuple[str, int]]:
    """The sessions the cache lacks, with their video's size in bytes, in the given order."""
    return [
        (r.session_id, _size(r.video_path))
        for r in _plan(request, survey(request).reading.read).decode
    ]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def decode_into_cache(
    request: DatasetRequest, watcher: DecodeWatcher
) -> dict[str, tuple[str, str]]:
    """Decode the request's sessions that the cache lacks (a rank's shard); nothing is labelled.

    Returns the (code, reason) of each session whose decoder failed: those are not cached.
    """
    cache.cache_dir(request.root).mkdir(parents=True, exist_ok=True)
    plan = _plan(request, frozenset(request.sessions))
    pool = _decoder_pool(request, watcher)
    failures: dict[str, tuple[str, str]] = {}
    results = pool.run(plan.decode)
    try:
        for session_id, outcome in results:
            ready = _read_back(plan.entries[session_id], outcome)
            if isinstance(ready, SkipSession):
                failures[session_id] = (ready.code, ready.reason)
    finally:
        results.close()
    return failures


def _decoder_pool(request: DatasetRequest, watcher: DecodeWatcher) -> DecoderPool:
    return DecoderPool(
        threads=request.threads,
        timeout_seconds=request.decoding.decodeTimeoutSeconds,
        should_stop=watcher.should_stop,
        is_paused=watcher.poll_pause,
        on_tick=watcher.show_decoding,
    )


def _wait_until_ready(session_id: str, plan: _Plan, results: Iterator[tuple[str, Outcome]]) -> bool:
    """Collect finished decoders until `session_id` is ready; False when they ran out."""
    while session_id not in plan.ready:
        try:
            finished, outcome = next(results)
        except StopIteration:
            return False
        plan.ready[finished] = _read_back(plan.entries[finished], outcome)
    return True


@dataclass(frozen=True)
class _Builders:
    training: WindowSetBuilder
    held_out: WindowSetBuilder
    selection: WindowSetBuilder


@dataclass(frozen=True)
class _Session:
    session_id: str
    recording: Recording | None
    entry: cache.CacheEntry | None
    ready: Ready


@dataclass(frozen=True)
class _Labelled:
    schema: Schema
    labels: Labels
    usable: list[int]
    commands: int
    invalid_lines: int
    dropped: dict[str, int]
    clipped_values: int
    command_types: str  # the log's command types and value names (manifest JSON)


def _label(session: _Session, schema: Schema, held_out: bool) -> _Labelled:
    """Read the command log and label the windows; raises SkipSession."""
    if isinstance(session.ready, SkipSession):
        raise session.ready
    recording = session.recording
    assert recording is not None
    frames = session.ready
    log = read_command_log(recording)
    if not held_out:
        schema = extended(
            schema, ((c.type, c.values) for c in log.commands), recording.command_roles
        )
    labels = label_windows(frames.ticks, log.commands, schema)
    stale = (frames.ticks - frames.frame_times) > STALE_FRAME_MS
    # A window a policy drove and nobody corrected holds no decision of a person's.
    usable = np.flatnonzero(~stale & ~labels.unsupported & ~labels.autonomous).tolist()
    labelled = _Labelled(
        schema=schema,
        labels=labels,
        usable=usable,
        commands=len(log.commands),
        invalid_lines=log.invalid_lines,
        dropped=dict(log.dropped),
        clipped_values=log.clipped_values,
        command_types=command_types_json((c.type, c.values) for c in log.commands),
    )
    if not usable and len(labels.autonomous) and labels.autonomous.all():
        raise PolicyDroveAll(recording.driven_by, field_figures_of(summary(labels)), labelled)
    if not usable:
        raise SkipSession("no_windows", "no usable window: no frame near any 100 ms tick")
    return labelled


def _process_session(
    request: DatasetRequest,
    dataset: Dataset,
    session: _Session,
    per_session: int,
    builders: _Builders,
    stream: EventStream,
) -> None:
    """Label one session, sample `per_session` of its windows (0: ingested, not sampled),
    emit its `dataset` event and, if it is new, its manifest row."""
    session_id = session.session_id
    partition = partition_of(session_id)
    held_out = partition is Partition.HELD_OUT
    try:
        labelled = _label(session, dataset.schema, held_out)
    except SkipSession as skip:
        if isinstance(skip, PolicyDroveAll):
            if skip.figures is not None:
                dataset.autonomous_only.append((skip.driven_by, skip.figures))
            _add_row(dataset, session, skip.labelled)
        _skip(dataset, stream, session_id, partition, skip)
        return
    except Exception as error:  # defence in depth: one session never ends the job
        _skip(dataset, stream, session_id, partition, _internal_skip(error))
        return
    recording, frames, labels = session.recording, session.ready, labelled.labels
    assert recording is not None and isinstance(frames, CachedFrames)
    indices: list[int] = []
    tail: list[int] = []
    if request.keep_windows and per_session:
        indices, tail = _sample(request, session_id, labelled, held_out, per_session)
        mapped = frames.frames  # one map per session, released when it is gathered
        if held_out:
            builders.held_out.add(mapped, labels, indices)
        else:
            builders.training.add(mapped, labels, indices)
            builders.selection.add(mapped, labels, tail)
        del mapped
    if not held_out:
        dataset.schema = labelled.schema
        dataset.trained_rovers.add(recording.rover_id)
        profile = recording.control_profile
        if profile is not None and profile not in dataset.control_profiles:
            dataset.control_profiles.append(profile)
    dataset.accepted.append(session_id)
    dataset.observed_windows[session_id] = len(labels.category)
    _add_row(dataset, session, labelled)
    result = SessionResult(
        session_id=session_id,
        partition=partition,
        decode=frames.stats,
        labels=summary(labels),
        windows=len(labels.category),
        usable_windows=len(labelled.usable),
        invalid_command_lines=labelled.invalid_lines,
        dropped_command_lines=labelled.dropped,
        clipped_command_values=labelled.clipped_values,
        commands=labelled.commands,
        sampled_windows=len(indices),
        selection_windows=len(tail),
        rover_id=recording.rover_id,
        control_profile=recording.control_profile,
        driven_by=recording.driven_by,
    )
    dataset.sessions.append(result)
    stream.emit(
        "dataset",
        sessionId=session_id,
        windows=result.windows,
        sampled=len(indices),
        partition=partition,
        diagnostics=result.diagnostics(),
    )


def _sample(
    request: DatasetRequest,
    session_id: str,
    labelled: _Labelled,
    held_out: bool,
    per_session: int,
) -> tuple[list[int], list[int]]:
    """(windows, selection tail) of one session: the natural mix for a held-out session; for
    a training one, per category from its head, take-over corrections repeated, and its tail."""
    labels = labelled.labels
    rng = session_rng(request.seed, session_id)
    categories = labels.category.tolist()
    if held_out:
        return sample_windows(labelled.usable, categories, True, per_session, rng), []
    fraction = request.sampling.selectionFraction
    head, tail = split_tail(labelled.usable, fraction)
    indices = sample_windows(head, categories, False, per_session, rng)
    repeats = request.sampling.takeOverRepeats
    if repeats > 1 and labels.corrections.any():
        room = 3 * category_capacity(per_session) - len(indices)
        corrections = labels.corrections.tolist()
        indices = with_corrections_repeated(indices, corrections, repeats, room)
    capacity = selection_capacity(per_session, fraction)
    return indices, sample_windows(tail, categories, True, capacity, rng)


def _add_row(dataset: Dataset, session: _Session, labelled: _Labelled) -> None:
    """The manifest row of a session this job ingested; read sessions' rows stand."""
    store, recording, entry = dataset.store, session.recording, session.entry
    if store is None or recording is None or entry is None:
        return
    if session.session_id not in store.survey.reading.ingested:
        store.read_entries.add(entry.name)
        return
    names = (recording.video_path.name, recording.commands_path.name)
    seen = fingerprint(recording.directory, names)
    if seen is None:
        return  # changed under us: ingested again next time
    labels = labelled.labels
    usable = np.bincount(labels.category[labelled.usable], minlength=3)
    store.read_entries.add(entry.name)
    store.ingested.append(
        ManifestRow(
            session_id=session.session_id,
            entry=entry.name,
            fingerprint=seen,
            video=names[0],
            commands=names[1],
            held_out=is_held_out(session.session_id),
            windows=len(labels.category),
            usable_none=int(usable[0]),
            usable_command=int(usable[1]),
            usable_stop=int(usable[2]),
            rover_id=recording.rover_id,
            control_profile=recording.control_profile,
            driven_by=recording.driven_by,
            supervised_windows=supervised_windows(labels.autonomous),
            autonomous_windows=int(labels.autonomous.sum()),
            take_overs=labels.take_overs,
            command_types=labelled.command_types,
            command_roles=json.dumps(dict(recording.command_roles)),
            generation=store.survey.manifest.next_generation(),
            entry_bytes=_size(entry.frames_path) + _size(entry.meta_path),
        )
    )


def _skip(
    dataset: Dataset, stream: EventStream, session_id: str, partition: Partition, skip: SkipSession
) -> None:
    dataset.rejected[session_id] = skip.reason
    detail = {"detail": skip.detail} if skip.detail else {}
    stream.emit(
        "skipped",
        sessionId=session_id,
        code=skip.code,
        reason=skip.reason,
        partition=partition,
        **detail,
    )
