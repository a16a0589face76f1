"""The window store at a job's edges: survey it before reading (which sessions are new, which
to read), bring the manifest up to date and honour the budget after.

Budget policy (`cacheMaxMegabytes`, docs/performance.md "The window store"), in this order:
1. entries no manifest row names (an older decoder's, a deleted recording's, a dead
   writer's): least recently used first;
2. then the frames of the oldest ingested sessions (manifest generation, then id), never
   those this job read: their rows stay, marked `dropped`, so the session keeps counting for
   the schema, the field figures and the trained rovers, and is not decoded again unless its
   recording changes. The recordings themselves are never touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rovertrain.data.partition import is_held_out
from rovertrain.data.reading import Older, ReadingPlan, plan_reading
from rovertrain.data.window_store import entries
from rovertrain.data.window_store.manifest import (
    Manifest,
    ManifestRow,
    fingerprint,
    read_manifest,
    write_manifest,
)
from rovertrain.store.durable import disk_error
from rovertrain.store.layout import Layout


@dataclass(frozen=True)
class StoreSurvey:
    """The store as a job found it, and what the job reads."""

    manifest: Manifest
    known: Mapping[str, ManifestRow]  # listed sessions whose recording is unchanged
    reading: ReadingPlan

    @property
    def had_manifest(self) -> bool:
        """False on a root written before the manifest (or with a broken one)."""
        return self.manifest.generation > 0


def survey_store(
    root: Path, sessions: Sequence[str], limits: tuple[int, int] | None, seed: int
) -> StoreSurvey:
    """Which listed sessions are known and unchanged, and the reading plan (`limits`:
    (sessionsPerJob, heldOutSessions); None reads every listed session, as `inspect` does)."""
    manifest = read_manifest(root)
    layout = Layout(root)
    known: dict[str, ManifestRow] = {}
    for session_id in sessions:
        row = manifest.rows.get(session_id)
        if row is None:
            continue
        directory = layout.recording_dir(session_id)
        if fingerprint(directory, (row.video, row.commands)) == row.fingerprint:
            known[session_id] = row
    new = [session_id for session_id in sessions if session_id not in known]
    if limits is None:
        reading = ReadingPlan(sampled=frozenset(sessions), ingested=frozenset(new))
    else:
        readable = [row for row in known.values() if not row.dropped and row.usable]
        older = [
            Older(row.session_id, row.rover_id, row.usable, row.usable_stop > 0)
            for row in readable
            if not row.held_out
        ]
        reading = plan_reading(
            training_new=[s for s in new if not is_held_out(s)],
            training_older=older,
            held_out_new=[s for s in new if is_held_out(s)],
            held_out_older=[row.session_id for row in readable if row.held_out],
            limits=limits,
            seed=seed,
            generation=manifest.generation,
        )
    return StoreSurvey(manifest, known, reading)


@dataclass
class StoreUpdate:
    """What a job adds to the store: rows of the sessions it ingested, the entries it read."""

    survey: StoreSurvey
    ingested: list[ManifestRow] = field(default_factory=list)
    read_entries: set[str] = field(default_factory=set)
    adopted: int = 0  # ingested from entries found in the store, not decoded by this job


@dataclass(frozen=True)
class StoreFigures:
    """The `store` event's figures."""

    rows: int
    dropped: int  # sessions whose frames this job removed for the budget
    orphan_bytes: int  # bytes of entries no manifest row named, removed
    store_bytes: int
    migrated: bool

    def event_fields(self) -> dict[str, object]:
        return {
            "storedSessions": self.rows,
            "droppedSessions": self.dropped,
            "orphanBytes": self.orphan_bytes,
            "storeBytes": self.store_bytes,
            "migrated": self.migrated,
        }


def commit_store(root: Path, update: StoreUpdate, budget_bytes: int) -> StoreFigures:
    """Write the manifest with the new rows, then honour the budget (module docstring)."""
    survey = update.survey
    rows = dict(survey.manifest.rows)
    for row in update.ingested:
        rows[row.session_id] = row
    referenced = {row.entry: row.entry_bytes for row in rows.values() if not row.dropped}
    orphan_bytes, total = entries.evict(root, budget_bytes, keep=referenced)
    to_drop = frames_to_drop(list(rows.values()), total, budget_bytes, update.read_entries)
    for session_id in to_drop:
        rows[session_id] = replace(rows[session_id], dropped=True)
    generation = survey.manifest.next_generation()
    try:
        write_manifest(root, generation, sorted(rows.values(), key=lambda row: row.session_id))
    except OSError as error:
        raise disk_error(error, "window store's manifest") from error
    for session_id in to_drop:  # after the manifest says so: a crash leaves rows, not holes
        entries.remove_entry(root, rows[session_id].entry)
    migrated = not survey.had_manifest and update.adopted > 0
    left = total - sum(rows[session_id].entry_bytes for session_id in to_drop)
    return StoreFigures(len(rows), len(to_drop), orphan_bytes, left, migrated)


def frames_to_drop(
    rows: Sequence[ManifestRow], total_bytes: int, budget_bytes: int, keep: set[str]
) -> list[str]:
    """Sessions whose frames go, oldest ingested first, until the store fits; pure."""
    dropped: list[str] = []
    ordered = sorted(
        (row for row in rows if not row.dropped and row.entry not in keep),
        key=lambda row: (row.generation, row.session_id),
    )
    for row in ordered:
        if total_bytes <= budget_bytes:
            break
        dropped.append(row.session_id)
        total_bytes -= row.entry_bytes
    return dropped
