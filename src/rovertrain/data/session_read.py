"""One session read: its command log labelled, its windows sampled, what it adds to the store.

`session_outcome` is everything the dataset needs from one session, as a picklable record
(`SessionOutcome`), so that a job's ranks can each read a disjoint shard of the sessions and
exchange the outcomes, and every rank then applies all of them in the job's order exactly as
one process would (data/dataset.py).
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rovertrain.contracts.command_schema import Schema, extended
from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.observation import STALE_FRAME_MS
from rovertrain.data.curation import Curation, LeftOut, covering_entry
from rovertrain.data.field import FieldFigures
from rovertrain.data.partition import Partition, partition_of
from rovertrain.data.recording import CommandLog, Recording, read_command_log
from rovertrain.data.sampling import (
    category_capacity,
    sample_windows,
    selection_capacity,
    session_rng,
    split_tail,
    with_corrections_repeated,
)
from rovertrain.data.settings import Sampling
from rovertrain.data.window_set import WindowSet, window_chunk
from rovertrain.data.window_store.entries import StoredFrames, StoreEntry
from rovertrain.data.window_store.manifest import ManifestRow, command_types_json, fingerprint
from rovertrain.data.windows import (
    Labels,
    LabelSummary,
    label_windows,
    summary,
    supervised_windows,
)


@dataclass(frozen=True)
class LeftOutWindows:
    """The windows of a session that would have been usable and curation.json leaves out."""

    windows: int
    reasons: dict[str, int]  # windows per reason; a window in several stretches: the first's

    def to_json(self) -> dict[str, Any]:
        return {"leftOutWindows": self.windows, "leftOutReasons": dict(self.reasons)}


@dataclass(frozen=True)
class SessionResult:
    """An accepted session's figures: the `dataset` event's diagnostics, typed."""

    session_id: str
    partition: Partition
    decode: dict[str, Any]  # the decoder's diagnostics, as stored in the window store (JSON)
    labels: LabelSummary
    windows: int
    usable_windows: int
    command_windows: tuple[int, ...]  # per slot: usable windows whose target is the type
    invalid_command_lines: int
    dropped_command_lines: dict[str, int]
    clipped_command_values: int
    commands: int
    sampled_windows: int
    selection_windows: int
    rover_id: str
    control_profile: str | None
    driven_by: str | None = None  # session.json drivenBy.model
    left_out: LeftOutWindows | None = None  # None: curation.json names no stretch of it

    def field_figures(self) -> FieldFigures | None:
        """How a policy drove this session under supervision (None: a person drove it all)."""
        return field_figures_of(self.labels)

    def diagnostics(self) -> dict[str, Any]:
        return {
            **self.decode,
            **self.labels.to_json(),
            "windows": self.windows,
            "usableWindows": self.usable_windows,
            "commandWindows": list(self.command_windows),
            "invalidCommandLines": self.invalid_command_lines,
            "droppedCommandLines": self.dropped_command_lines,
            "clippedCommandValues": self.clipped_command_values,
            "commands": self.commands,
            "partition": self.partition,
            "sampledWindows": self.sampled_windows,
            "selectionWindows": self.selection_windows,
            "roverId": self.rover_id,
            "controlProfile": self.control_profile,
            **(self.left_out.to_json() if self.left_out is not None else {}),
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


Ready = StoredFrames | SkipSession


@dataclass(frozen=True)
class Session:
    """A session to read: its recording and store entry (None when it could not be read)
    and its frames, or why it is skipped."""

    session_id: str
    recording: Recording | None
    entry: StoreEntry | None
    ready: Ready


@dataclass(frozen=True)
class Labelled:
    schema: Schema  # the schema grown by this session's command types (training sessions)
    labels: Labels
    usable: list[int]  # the windows the job uses: the recording's, less those left out
    log: CommandLog
    source: tuple[str, str]  # `command_source`: its command types and roles (manifest JSON)
    recorded: list[int]  # the recording's usable windows, before curation (the manifest's)
    left_out: LeftOutWindows | None  # None: curation.json names no stretch of it


def command_source(recording: Recording, log: CommandLog) -> tuple[str, str]:
    """A session's command types with their value names, and its command roles (manifest
    JSON): what it adds to the schema."""
    types = command_types_json((command.type, command.values) for command in log.commands)
    return types, json.dumps(dict(recording.command_roles))


def session_schema(schema: Schema, recording: Recording, log: CommandLog) -> Schema:
    """The schema grown by a training session's command types: every session whose command
    log was read adds its types, in the job's order, whether or not it has usable windows."""
    commands = ((command.type, command.values) for command in log.commands)
    return extended(schema, commands, recording.command_roles)


def label_session(
    session: Session,
    schema: Schema,
    held_out: bool,
    log: CommandLog | None = None,
    left_out: Sequence[LeftOut] = (),
) -> Labelled:
    """Read the command log (unless given) and label the windows; the windows inside the
    session's `left_out` stretches are not usable. Raises SkipSession."""
    if isinstance(session.ready, SkipSession):
        raise session.ready
    recording = session.recording
    assert recording is not None
    frames = session.ready
    log = log if log is not None else read_command_log(recording)
    if not held_out:
        schema = session_schema(schema, recording, log)
    labels = label_windows(frames.ticks, log.commands, schema)
    stale = (frames.ticks - frames.frame_times) > STALE_FRAME_MS
    # A window a policy drove and nobody corrected holds no decision of a person's.
    usable = ~stale & ~labels.unsupported & ~labels.autonomous
    curated, figures = _curated(frames.ticks, usable, left_out)
    recorded = np.flatnonzero(usable).tolist()
    source = command_source(recording, log)
    return Labelled(schema, labels, curated, log, source, recorded, figures)


def _curated(
    ticks: np.ndarray, usable: np.ndarray, left_out: Sequence[LeftOut]
) -> tuple[list[int], LeftOutWindows | None]:
    """The usable windows outside the stretches left out, and what was left out."""
    if not left_out:
        return np.flatnonzero(usable).tolist(), None
    covering = covering_entry(ticks, left_out)
    dropped = usable & (covering >= 0)
    reasons: dict[str, int] = {}
    for index in covering[dropped].tolist():
        reason = left_out[index].reason
        reasons[reason] = reasons.get(reason, 0) + 1
    figures = LeftOutWindows(int(dropped.sum()), dict(sorted(reasons.items())))
    return np.flatnonzero(usable & ~dropped).tolist(), figures


@dataclass(frozen=True)
class Skip:
    """Why a session was skipped (picklable, unlike the exception)."""

    code: str
    reason: str
    detail: str | None = None

    def exception(self) -> SkipSession:
        return SkipSession(self.code, self.reason, self.detail)


@dataclass(frozen=True)
class SessionOutcome:
    """What one session read gives the dataset: picklable, so ranks can exchange it."""

    session_id: str
    partition: Partition
    schema: Schema | None  # the schema after this session; None: its log was not read
    result: SessionResult | None = None  # None: skipped
    skip: Skip | None = None
    windows: WindowSet | None = None  # training or held-out windows sampled
    selection: WindowSet | None = None  # a training session's tail
    row: ManifestRow | None = None  # a new session's manifest row
    entry: str | None = None  # its store entry, read by this job
    field: tuple[str | None, FieldFigures] | None = None  # a session a policy drove all


@dataclass(frozen=True)
class Reading:
    """What reading needs beyond the session: the job's seed, sampling and curation, and the
    store."""

    seed: int
    sampling: Sampling
    keep_windows: bool
    generation: int  # the manifest generation a new session's row gets
    curation: Curation = field(default_factory=Curation)  # read once, at the job's start


def session_outcome(
    reading: Reading,
    schema: Schema,
    session: Session,
    quota: int,
    new: bool,
    log: CommandLog | None = None,
) -> SessionOutcome:
    """Label one session and sample `quota` of its windows (0: ingested, not sampled)."""
    session_id = session.session_id
    partition = partition_of(session_id)
    held_out = partition is Partition.HELD_OUT
    left_out = reading.curation.for_session(session_id)
    try:
        labelled = label_session(session, schema, held_out, log, left_out)
    except SkipSession as skip:
        return SessionOutcome(session_id, partition, None, skip=Skip(*_skip_fields(skip)))
    except Exception as error:  # defence in depth: one session never ends the job
        return SessionOutcome(session_id, partition, None, skip=internal_skip(error))
    recording, frames, labels = session.recording, session.ready, labelled.labels
    assert recording is not None and isinstance(frames, StoredFrames)
    grown = None if held_out else labelled.schema
    row = _manifest_row(session, labelled, reading.generation) if new else None
    entry = session.entry.name if session.entry is not None else None
    if not labelled.usable:
        if len(labels.autonomous) and labels.autonomous.all():
            figures = field_figures_of(summary(labels))
            field = (recording.driven_by, figures) if figures is not None else None
            why = Skip("no_windows", "no usable window: a policy drove every window")
            return SessionOutcome(
                session_id, partition, grown, skip=why, row=row, entry=entry, field=field
            )
        why = Skip("no_windows", "no usable window: no frame near any 100 ms tick")
        if labelled.recorded:
            why = Skip("no_windows", "no usable window: curation.json leaves out every one")
        return SessionOutcome(session_id, partition, grown, skip=why, row=row, entry=entry)
    windows = selection = None
    indices: list[int] = []
    tail: list[int] = []
    if reading.keep_windows and quota:
        indices, tail = _sample(reading, session_id, labelled, held_out, quota)
        mapped = frames.frames  # one map per session, released when its windows are copied
        windows = window_chunk(mapped, labels, indices)
        selection = None if held_out else window_chunk(mapped, labels, tail)
        del mapped
    log = labelled.log
    result = SessionResult(
        session_id=session_id,
        partition=partition,
        decode=frames.stats,
        labels=summary(labels),
        windows=len(labels.category),
        usable_windows=len(labelled.usable),
        command_windows=tuple(int(n) for n in labels.fires[labelled.usable].sum(axis=0)),
        invalid_command_lines=log.invalid_lines,
        dropped_command_lines=dict(log.dropped),
        clipped_command_values=log.clipped_values,
        commands=len(log.commands),
        sampled_windows=len(indices),
        selection_windows=len(tail),
        rover_id=recording.rover_id,
        control_profile=recording.control_profile,
        driven_by=recording.driven_by,
        left_out=labelled.left_out,
    )
    return SessionOutcome(
        session_id, partition, grown, result, None, windows, selection, row, entry
    )


def _skip_fields(skip: SkipSession) -> tuple[str, str, str | None]:
    return skip.code, skip.reason, skip.detail or None


def internal_skip(error: Exception) -> Skip:
    """An unexpected error while reading one session: that session is skipped, with the
    traceback's end as the detail."""
    detail = "".join(traceback.format_exception(error))[-4000:]
    reason = f"unexpected {type(error).__name__} while reading the session: {str(error)[:300]}"
    return Skip("session_internal", reason, detail)


def _sample(
    reading: Reading, session_id: str, labelled: Labelled, held_out: bool, quota: int
) -> tuple[list[int], list[int]]:
    """(windows, selection tail) of one session: the natural mix for a held-out session; for
    a training one, per category from its head, take-over corrections repeated, and its tail."""
    labels = labelled.labels
    rng = session_rng(reading.seed, session_id)
    categories = labels.category.tolist()
    if held_out:
        return sample_windows(labelled.usable, categories, True, quota, rng), []
    sampling = reading.sampling
    fraction = sampling.selectionFraction
    head, tail = split_tail(labelled.usable, fraction)
    indices = sample_windows(head, categories, False, quota, rng)
    repeats = sampling.takeOverRepeats
    if repeats > 1 and labels.corrections.any():
        room = 3 * category_capacity(quota) - len(indices)
        corrections = labels.corrections.tolist()
        indices = with_corrections_repeated(indices, corrections, repeats, room)
    capacity = selection_capacity(quota, fraction)
    return indices, sample_windows(tail, categories, True, capacity, rng)


def _manifest_row(session: Session, labelled: Labelled, generation: int) -> ManifestRow | None:
    """The manifest row of a session this job ingests (None: its files changed under us, so
    it is ingested again next time)."""
    recording, entry = session.recording, session.entry
    if recording is None or entry is None:
        return None
    names = (recording.video_path.name, recording.commands_path.name)
    seen = fingerprint(recording.directory, names)
    if seen is None:
        return None
    labels = labelled.labels
    # The recording's usable windows, before curation: a stored row does not change when
    # curation.json does.
    usable = np.bincount(labels.category[labelled.recorded], minlength=3)
    return ManifestRow(
        session_id=session.session_id,
        entry=entry.name,
        fingerprint=seen,
        video=names[0],
        commands=names[1],
        held_out=partition_of(session.session_id) is Partition.HELD_OUT,
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
        command_types=labelled.source[0],
        command_roles=labelled.source[1],
        generation=generation,
        entry_bytes=_size(entry.frames_path) + _size(entry.meta_path),
    )


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
