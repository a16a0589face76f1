"""Sessions in, sampled windows out: decode (stored, isolated), label, sample, gather.

Sessions are decoded in parallel but processed strictly in the given order, so the schema
grows and samples are drawn exactly as in a sequential run: same job, data and seed give the
same partition, samples and schema.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, Schema
from rovertrain.contracts.errors import SkipSession
from rovertrain.data.curation import Curation
from rovertrain.data.field import UNKNOWN_MODEL, FieldFigures, pooled
from rovertrain.data.partition import Partition, is_held_out
from rovertrain.data.reading import reading_shard
from rovertrain.data.recording import CommandLog, Recording, load_recording, read_command_log
from rovertrain.data.sampling import category_capacity, per_session_capacity, selection_capacity
from rovertrain.data.session_read import (
    Reading,
    Ready,
    Session,
    SessionOutcome,
    SessionResult,
    Skip,
    command_source,
    internal_skip,
    session_outcome,
)
from rovertrain.data.settings import Decoding, Sampling
from rovertrain.data.window_set import WindowSet, WindowSetBuilder
from rovertrain.data.window_store import entries
from rovertrain.data.window_store.entries import StoreEntry
from rovertrain.data.window_store.manifest import ManifestRow, extend_with
from rovertrain.data.window_store.upkeep import StoreSurvey, StoreUpdate, survey_store
from rovertrain.protocol.events import EventStream
from rovertrain.video.decode_protocol import DecodeDone, DecodeLimits, DecodeRequest, Outcome
from rovertrain.video.decoder_pool import DecoderPool

__all__ = ["Dataset", "DatasetRequest", "SessionResult", "build_dataset"]


@dataclass
class Dataset:
    schema: Schema
    training: WindowSet  # the training sessions' sampled windows
    held_out: WindowSet  # the held-out sessions' windows: the gate's
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

    def natural_command_windows(self) -> tuple[int, np.ndarray]:
        """Usable training windows, and per slot those a person's command of the type lands in
        (the windows it is the target of), before any sampling. A window is one target however
        many commands land in it: a teleop page sending every 20 ms fills each window with
        five, and counting commands would make a rate above one window in one."""
        training = self.of_partition(Partition.TRAINING)
        counts = np.zeros(SLOTS)
        for result in training:
            counts[: len(result.command_windows)] += result.command_windows
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
    """Sessions the job's ranks decoded into the window store before the dataset is built (distributed
    runs): which ones, and the (code, reason) of those that failed, which the store lacks."""

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
    maintains_store: bool = True  # removes temporaries and evicts: one rank only
    exchange: Exchange | None = None  # the job's ranks, each reading a shard (job/ranks.py)
    curation: Curation = field(default_factory=Curation)  # stretches left out (read at start)


class Exchange(Protocol):
    """The job's ranks as the dataset sees them (job/ranks.py implements it)."""

    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value` (picklable), in rank order, on every rank."""
        ...


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


@dataclass
class _Plan:
    """Each session's recording and store entry, what is ready, and what must be decoded."""

    recordings: dict[str, Recording] = field(default_factory=dict)
    entries: dict[str, StoreEntry] = field(default_factory=dict)
    ready: dict[str, Ready] = field(default_factory=dict)
    decode: list[DecodeRequest] = field(default_factory=list)


def _plan(request: DatasetRequest, read: frozenset[str]) -> _Plan:
    """The sessions to read, in the given order: their recordings, entries and the entries the store holds."""
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
            entry = entries.entry_for(request.root, recording)
        except SkipSession as skip:
            plan.ready[session_id] = skip
            continue
        except OSError as error:
            plan.ready[session_id] = SkipSession("invalid_recording", f"cannot read: {error}")
            continue
        except Exception as error:  # defence in depth: one session never ends the job
            plan.ready[session_id] = internal_skip(error).exception()
            continue
        plan.recordings[session_id] = recording
        plan.entries[session_id] = entry
        started = time.monotonic()
        hit = entries.load(entry)
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


def _read_back(entry: StoreEntry, outcome: Outcome) -> Ready:
    if not isinstance(outcome, DecodeDone):
        return SkipSession(outcome.code, outcome.reason)
    loaded = entries.load(entry)
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
    store holds and the reading plan leaves out count from their manifest rows. Under
    several ranks (`request.exchange`), each reads a disjoint shard and all apply every
    outcome in the same order: the same dataset as one process builds."""
    started = time.monotonic()
    # Several ranks share the reading; one rank (or none given) reads alone.
    given = request.exchange
    exchange = given if given is not None and given.size > 1 else None
    if exchange is not None:  # the leader's survey for every rank: one plan
        found = exchange.gather(survey(request) if exchange.rank == 0 else None)[0]
    else:
        found = survey(request)
    reading = found.reading
    sampled = [session_id for session_id in request.sessions if session_id in reading.sampled]
    per_session = per_session_capacity(request.sampling.maxSamples, len(sampled))
    training_count = sum(not is_held_out(session_id) for session_id in sampled)
    keep = request.keep_windows
    fraction = request.sampling.selectionFraction
    builders = _Builders(
        training=WindowSetBuilder(
            training_count * 3 * category_capacity(per_session) if keep else 0
        ),
        held_out=WindowSetBuilder((len(sampled) - training_count) * per_session if keep else 0),
        selection=WindowSetBuilder(
            training_count * selection_capacity(per_session, fraction) if keep else 0
        ),
    )
    dataset = Dataset(
        schema=request.schema,
        training=builders.training.build(),
        held_out=builders.held_out.build(),
        selection=builders.selection.build(),
        store=StoreUpdate(found),
    )
    entries.store_dir(request.root).mkdir(parents=True, exist_ok=True)
    if request.maintains_store:
        entries.remove_temporaries(request.root)
    generation = found.manifest.next_generation()
    session_reading = Reading(request.seed, request.sampling, keep, generation, request.curation)
    job = _JobReading(request, found, session_reading, per_session)
    if exchange is not None:
        _read_shared(job, dataset, builders, stream, watcher, exchange)
    else:
        _read_in_order(job, dataset, builders, stream, watcher)
    dataset.training = builders.training.build()
    dataset.held_out = builders.held_out.build()
    dataset.selection = builders.selection.build()
    dataset.decode_seconds = round(time.monotonic() - started, 3)
    return dataset


@dataclass(frozen=True)
class _JobReading:
    request: DatasetRequest
    found: StoreSurvey
    reading: Reading
    per_session: int

    def outcome(
        self, schema: Schema, session: Session, log: CommandLog | None = None
    ) -> SessionOutcome:
        plan = self.found.reading
        session_id = session.session_id
        quota = self.per_session if session_id in plan.sampled else 0
        row = self.found.known.get(session_id)
        entry = session.entry.name if session.entry is not None else None
        # A stored session decoded again into another entry (a new decoder or input
        # version) gets a fresh row: the old entry becomes an orphan, the new one is kept.
        fresh = session_id in plan.ingested or (row is not None and entry not in (None, row.entry))
        return session_outcome(self.reading, schema, session, quota, fresh, log)


def _read_in_order(
    job: _JobReading,
    dataset: Dataset,
    builders: _Builders,
    stream: EventStream,
    watcher: DecodeWatcher,
) -> None:
    """One process: each session read and applied in the job's order."""
    request, plan_of_reading = job.request, job.found.reading
    plan = _plan(request, plan_of_reading.read)
    results = _decoder_pool(request, watcher).run(plan.decode)
    try:
        for session_id in request.sessions:
            if session_id not in plan_of_reading.read:
                _count_unread(dataset, job.found.known[session_id])
                continue
            if not _wait_until_ready(session_id, plan, results) or watcher.should_stop():
                break
            session = _session(plan, session_id)
            _apply(dataset, builders, stream, job.outcome(dataset.schema, session))
    finally:
        results.close()  # stops any decoder still running (the pool's finally)


def _session(plan: _Plan, session_id: str) -> Session:
    recording, entry = plan.recordings.get(session_id), plan.entries.get(session_id)
    return Session(session_id, recording, entry, plan.ready.pop(session_id))


def _read_shared(
    job: _JobReading,
    dataset: Dataset,
    builders: _Builders,
    stream: EventStream,
    watcher: DecodeWatcher,
    exchange: Exchange,
) -> None:
    """Several ranks: each reads its shard of the sessions (`reading_shard`); the command
    types are exchanged so that every rank labels each session with the schema one process
    would have at it; the outcomes are exchanged, and every rank applies them all in the
    job's order."""
    request, found = job.request, job.found
    read = [session_id for session_id in request.sessions if session_id in found.reading.read]
    mine = reading_shard(read, found.known, exchange.rank, exchange.size)
    plan = _plan(request, frozenset(mine))
    results = _decoder_pool(request, watcher).run(plan.decode)
    sessions: dict[str, Session] = {}
    try:
        for session_id in mine:
            if not _wait_until_ready(session_id, plan, results):
                break
            sessions[session_id] = _session(plan, session_id)
    finally:
        results.close()
    logs = {session_id: _log_of(session) for session_id, session in sessions.items()}
    types = {
        session_id: command_source(recording, log)
        for session_id, log in logs.items()
        if log is not None
        and not is_held_out(session_id)
        and (recording := sessions[session_id].recording) is not None
    }
    every_type: dict[str, tuple[str, str]] = {}
    for shard in exchange.gather(types):
        every_type.update(shard)
    schemas = _schemas_before(request, found, every_type)
    outcomes: dict[str, SessionOutcome] = {}
    for session_id, session in sessions.items():
        if watcher.should_stop():
            break
        outcomes[session_id] = job.outcome(schemas[session_id], session, logs[session_id])
    every: dict[str, SessionOutcome] = {}
    for shard_outcomes in exchange.gather(outcomes):
        every.update(shard_outcomes)
    for session_id in request.sessions:
        if session_id not in found.reading.read:
            _count_unread(dataset, found.known[session_id])
        elif session_id in every:
            _apply(dataset, builders, stream, every[session_id])
        else:
            break  # a stop: the sessions after it are not read, as in one process


def _log_of(session: Session) -> CommandLog | None:
    if session.recording is None or isinstance(session.ready, SkipSession):
        return None
    try:
        return read_command_log(session.recording)
    except Exception:  # a rank never leaves before the exchange: its outcome says why
        return None


def _schemas_before(
    request: DatasetRequest, found: StoreSurvey, types: dict[str, tuple[str, str]]
) -> dict[str, Schema]:
    """The schema each session is labelled with under one process: grown, in the job's
    order, by the command types of the training sessions before it (those read, from their
    logs; the others, from their manifest rows)."""
    schema = request.schema
    before: dict[str, Schema] = {}
    applied: set[tuple[str, str]] = set()
    for session_id in request.sessions:
        before[session_id] = schema
        if is_held_out(session_id):
            continue
        if session_id in types:
            source = types[session_id]
        elif session_id not in found.reading.read:
            row = found.known[session_id]
            source = (row.command_types, row.command_roles)
        else:
            continue
        if source not in applied:  # the same types again change nothing
            applied.add(source)
            schema = extend_with(schema, *source)
    return before


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


def unstored_sessions(request: DatasetRequest) -> list[tuple[str, int]]:
    """The sessions the window store lacks, with their video's size in bytes, in the given order."""
    return [
        (r.session_id, _size(r.video_path))
        for r in _plan(request, survey(request).reading.read).decode
    ]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def decode_into_store(
    request: DatasetRequest, watcher: DecodeWatcher
) -> dict[str, tuple[str, str]]:
    """Decode the request's sessions that the window store lacks (a rank's shard); nothing is labelled.

    Returns the (code, reason) of each session whose decoder failed: the store holds none of those.
    """
    entries.store_dir(request.root).mkdir(parents=True, exist_ok=True)
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


def _apply(
    dataset: Dataset, builders: _Builders, stream: EventStream, outcome: SessionOutcome
) -> None:
    """One session's outcome into the dataset, in the job's order: the schema it grew, its
    windows, its manifest row, its `dataset` or `skipped` event."""
    held_out = outcome.partition is Partition.HELD_OUT
    if outcome.schema is not None:
        dataset.schema = outcome.schema
    store = dataset.store
    if store is not None and outcome.entry is not None:
        store.read_entries.add(outcome.entry)
        if outcome.row is not None:
            store.ingested.append(outcome.row)
            if outcome.result is not None and outcome.result.decode.get("cached"):
                store.adopted += 1  # an entry written before this job (an earlier release's)
    result = outcome.result
    if result is None:
        if outcome.field is not None:
            dataset.autonomous_only.append(outcome.field)
        skip = outcome.skip or Skip("session_internal", "no outcome")
        _skip(dataset, stream, outcome.session_id, outcome.partition, skip)
        return
    if outcome.windows is not None:
        (builders.held_out if held_out else builders.training).add(outcome.windows)
    if outcome.selection is not None:
        builders.selection.add(outcome.selection)
    if not held_out:
        dataset.trained_rovers.add(result.rover_id)
        profile = result.control_profile
        if profile is not None and profile not in dataset.control_profiles:
            dataset.control_profiles.append(profile)
    dataset.accepted.append(result.session_id)
    dataset.observed_windows[result.session_id] = result.windows
    dataset.sessions.append(result)
    stream.emit(
        "dataset",
        sessionId=result.session_id,
        windows=result.windows,
        sampled=result.sampled_windows,
        partition=result.partition,
        diagnostics=result.diagnostics(),
    )


def _skip(
    dataset: Dataset, stream: EventStream, session_id: str, partition: Partition, skip: Skip
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
