"""The curation file, ROOT/curation.json: stretches of sessions a person leaves out of training
and of the held-out scores, without touching the recording (docs/recording-format.md,
"Leaving stretches out").

A stretch is [startMs, endMs] on the session's command clock, the clock of the windows' 100 ms
ticks: a window whose tick lies inside (bounds included) is left out. The file is the person's:
`parse_curation` refuses anything it does not understand rather than guess, and the writers
(`add_left_out`, `remove_left_out`) read, change and replace it whole under a lock, so two
writers at once lose nothing and a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.identifiers import valid_identifier
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.data.recording import read_small
from rovertrain.store.durable import atomic_replace, disk_error
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    import numpy as np

CURATION_FORMAT = "rovertrain-curation/1"
MAX_CURATION_BYTES = 16 * 2**20
MAX_ENTRIES = 100_000
MAX_ID_CHARS = 64
MAX_REASON_CHARS = 500
MAX_TIME_MS = 2**53 - 1  # the command log's bound on `t`: every such time is exact in a double
ENTRY_ID = re.compile(r"[A-Za-z0-9._-]+")
INVALID = "invalid_curation"
ENTRY_KEYS = frozenset({"id", "sessionId", "startMs", "endMs", "reason", "at"})


@dataclass(frozen=True)
class LeftOut:
    """One stretch of one session left out: windows with startMs <= tick <= endMs."""

    id: str
    session_id: str
    start_ms: float
    end_ms: float
    reason: str
    at: str  # when it was marked, ISO 8601 UTC, as written
    # Keys this version does not know (a script's note, a later version's field): kept as
    # they were, so that a write through `add_left_out` or `remove_left_out` loses nothing.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        """The file's entry (camelCase); whole milliseconds are written as integers."""
        return {
            **self.extra,
            "id": self.id,
            "sessionId": self.session_id,
            "startMs": _number(self.start_ms),
            "endMs": _number(self.end_ms),
            "reason": self.reason,
            "at": self.at,
        }


@dataclass(frozen=True)
class Curation:
    """The curation file's entries, in the file's order (empty: no file)."""

    entries: tuple[LeftOut, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)  # kept

    @cached_property
    def _by_session(self) -> dict[str, tuple[LeftOut, ...]]:
        # A job asks once per session; a scan per session would be sessions × entries.
        grouped: dict[str, list[LeftOut]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.session_id, []).append(entry)
        return {session_id: tuple(entries) for session_id, entries in grouped.items()}

    def for_session(self, session_id: str) -> tuple[LeftOut, ...]:
        """The session's stretches, in the file's order."""
        return self._by_session.get(session_id, ())

    def sessions(self) -> set[str]:
        """The sessions some entry names."""
        return set(self._by_session)

    def to_json(self) -> dict[str, Any]:
        entries = [entry.to_json() for entry in self.entries]
        return {**self.extra, "format": CURATION_FORMAT, "leftOut": entries}


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _invalid(message: str) -> RovertrainError:
    return RovertrainError(INVALID, f"curation.json: {message}")


# -- reading ---------------------------------------------------------------------------------


def parse_curation(data: bytes) -> Curation:
    """The curation file's bytes to its entries; raises RovertrainError `invalid_curation`
    naming the entry and the field at the first rule broken."""
    if len(data) > MAX_CURATION_BYTES:
        raise _invalid(f"larger than {MAX_CURATION_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # an editor's byte order mark
    except UnicodeDecodeError as error:
        raise _invalid(f"not UTF-8 (byte {error.start})") from None
    try:
        document = parse_json(text)
    except BadJson as error:
        raise _invalid(f"not valid JSON ({error.detail})") from None
    if not isinstance(document, dict):
        raise _invalid("must be a JSON object")
    if document.get("format") != CURATION_FORMAT:
        raise _invalid(f"format: must be {CURATION_FORMAT!r}")
    listed = document.get("leftOut")
    if not isinstance(listed, list):
        raise _invalid("leftOut: must be a list")
    if len(listed) > MAX_ENTRIES:
        raise _invalid(f"leftOut: more than {MAX_ENTRIES} entries ({len(listed)})")
    entries = tuple(_entry(index, item) for index, item in enumerate(listed))
    _check_unique(entries)
    extra = {key: value for key, value in document.items() if key not in ("format", "leftOut")}
    return Curation(entries, extra)


def _entry(index: int, item: Any) -> LeftOut:
    where = f"leftOut[{index}]"
    if not isinstance(item, dict):
        raise _invalid(f"{where}: must be an object")
    entry = LeftOut(
        id=_required(item, "id", where),
        session_id=_required(item, "sessionId", where),
        start_ms=_required(item, "startMs", where),
        end_ms=_required(item, "endMs", where),
        reason=_required(item, "reason", where),
        at=_required(item, "at", where),
    )
    problem = entry_problem(entry)
    if problem is not None:
        raise _invalid(f"{where}.{problem}")
    # Integers become doubles, the windows' clock; within 2^53 every one is exact.
    extra = {key: value for key, value in item.items() if key not in ENTRY_KEYS}
    return LeftOut(
        entry.id,
        entry.session_id,
        float(entry.start_ms),
        float(entry.end_ms),
        entry.reason,
        entry.at,
        extra,
    )


def _required(item: dict[str, Any], key: str, where: str) -> Any:
    if key not in item:
        raise _invalid(f"{where}.{key}: missing")
    return item[key]


def entry_problem(entry: LeftOut) -> str | None:
    """What is wrong with an entry, as `field: why` (None: nothing). One rule for the file's
    entries and for an entry `add_left_out` is about to write."""
    if not isinstance(entry.id, str) or not 1 <= len(entry.id) <= MAX_ID_CHARS:
        return f"id: must be a string of 1 to {MAX_ID_CHARS} characters"
    if not ENTRY_ID.fullmatch(entry.id):
        return f"id: {entry.id!r} has characters other than letters, digits, '.', '_', '-'"
    if not valid_identifier(entry.session_id):
        return f"sessionId: {_show(entry.session_id)} is not a session id"
    for name, value in (("startMs", entry.start_ms), ("endMs", entry.end_ms)):
        if not _is_time(value):
            return f"{name}: must be a number within ±(2^53 − 1), not {_show(value)}"
    if not entry.start_ms < entry.end_ms:
        return f"endMs: must be greater than startMs ({_number(entry.start_ms)})"
    if not isinstance(entry.reason, str) or not 1 <= len(entry.reason) <= MAX_REASON_CHARS:
        return f"reason: must be a string of 1 to {MAX_REASON_CHARS} characters"
    if not _encodable(entry.reason):
        return "reason: has a lone surrogate (not text UTF-8 can hold)"
    if not isinstance(entry.at, str) or not _is_utc_time(entry.at):
        return f"at: {_show(entry.at)} is not an ISO 8601 UTC time (2026-12-06T10:00:00Z)"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_time(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and abs(value) <= MAX_TIME_MS


def _is_utc_time(text: str) -> bool:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text and moment.utcoffset() == timedelta(0)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _check_unique(entries: Sequence[LeftOut]) -> None:
    first: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.id in first:
            raise _invalid(
                f"leftOut[{index}].id: {entry.id!r} is also leftOut[{first[entry.id]}]'s"
            )
        first[entry.id] = index


def read_curation(root: Path) -> Curation:
    """The root's curation file (empty when there is none). A link, a folder or any other file
    that is not a regular one is refused; so is a file over the size limit, before reading it."""
    path = Layout(root).curation
    if not os.path.lexists(path):
        return Curation()
    try:  # the recordings' reader: no link followed, no FIFO waited on, the size bounded
        data = read_small(path, MAX_CURATION_BYTES)
    except SkipSession as refused:
        if refused.code == "too_large":
            raise _invalid(f"larger than {MAX_CURATION_BYTES // 2**20} MiB") from None
        raise RovertrainError(INVALID, refused.reason) from None
    return parse_curation(data)


# -- writing ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """An exclusive flock on ROOT/.curation.lock (never deleted: deleting it would let a
    second writer lock a new file while the first holds the old one)."""
    path = Layout(root).curation_lock
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        raise disk_error(error, "curation lock") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # writers wait for each other: each holds it briefly
        yield
    finally:
        os.close(fd)  # releases the lock


def _write(root: Path, curation: Curation) -> None:
    lines = [json.dumps(entry.to_json(), ensure_ascii=False) for entry in curation.entries]
    body = ",\n  ".join(lines)
    # The document's own keys first (format, then any a person or script added), one entry a
    # line: a diff of the file shows which stretch came or went.
    head = json.dumps({**curation.extra, "format": CURATION_FORMAT}, ensure_ascii=False)[:-1]
    text = f'{head},\n "leftOut": [\n  {body}\n ]}}\n' if lines else f'{head}, "leftOut": []}}\n'
    try:
        atomic_replace(Layout(root).curation, text.encode("utf-8"))
    except OSError as error:
        raise disk_error(error, "curation file") from None


def _timestamp(now: datetime | None) -> str:
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is None:  # a naive time is taken for UTC, never for local time
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def add_left_out(
    root: Path,
    session_id: str,
    start_ms: float,
    end_ms: float,
    reason: str,
    now: datetime | None = None,
) -> LeftOut:
    """Leave out [start_ms, end_ms] of a session: the new entry, appended to the file. Bad
    input, or a file that is itself invalid (a person's hand edit is never overwritten),
    raises `invalid_curation` and leaves the file as it was."""
    entry = LeftOut("lo-00000000", session_id, start_ms, end_ms, reason, _timestamp(now))
    problem = entry_problem(entry)
    if problem is not None:
        raise _invalid(f"the new entry's {problem}")
    with _locked(root):
        curation = read_curation(root)
        if len(curation.entries) >= MAX_ENTRIES:
            raise _invalid(f"leftOut: already {MAX_ENTRIES} entries, the most it may hold")
        taken = {existing.id for existing in curation.entries}
        new_id = _new_id(taken)
        entry = LeftOut(new_id, session_id, float(start_ms), float(end_ms), reason, entry.at)
        _write(root, Curation((*curation.entries, entry), curation.extra))
    return entry


def _new_id(taken: set[str]) -> str:
    while True:
        candidate = f"lo-{secrets.token_hex(4)}"
        if candidate not in taken:
            return candidate


def remove_left_out(root: Path, entry_id: str) -> bool:
    """Take an entry out of the file (its stretch is used again by the next job); False when
    there is no such entry (already removed)."""
    with _locked(root):
        curation = read_curation(root)
        kept = tuple(entry for entry in curation.entries if entry.id != entry_id)
        if len(kept) == len(curation.entries):
            return False
        _write(root, Curation(kept, curation.extra))
    return True


# -- windows ---------------------------------------------------------------------------------


def covering_entry(ticks: np.ndarray, entries: Sequence[LeftOut]) -> np.ndarray:
    """Per tick, the index in `entries` of the first stretch holding it (-1: none). A tick
    inside several stretches belongs to the first, so each left-out window counts once."""
    # numpy on demand: a job reads this file before it lowers its priority (job/run.py step
    # 1), and a thread pool numpy starts on import would keep the normal priority.
    import numpy as np

    times = np.asarray(ticks, dtype=np.float64)
    covering = np.full(len(times), -1, dtype=np.int64)
    for index in reversed(range(len(entries))):  # the earlier entries overwrite the later
        entry = entries[index]
        covering[(times >= entry.start_ms) & (times <= entry.end_ms)] = index
    return covering


def left_out_mask(ticks: np.ndarray, entries: Sequence[LeftOut]) -> np.ndarray:
    """bool per tick: inside one of `entries`' stretches (bounds included). The caller picks
    the session's entries (`Curation.for_session`)."""
    return covering_entry(ticks, entries) >= 0
