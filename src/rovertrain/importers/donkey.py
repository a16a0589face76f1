"""`rovertrain import donkey`: Donkeycar tubs (v2) as recordings, one per Donkeycar session.

Reading (this module) turns a tub into `SessionPlan`s: the human's records in time order and
what was left out, by reason. Writing decodes each record's JPEG and encodes it at the
record's own time into a VP8 WebM; the controls become commands (`commands.extract_commands`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rovertrain.contracts.errors import SkipSession
from rovertrain.contracts.identifiers import valid_identifier
from rovertrain.data.recording import Command, open_regular, read_small
from rovertrain.importers.commands import (
    CommandRules,
    ControlSample,
    Dropped,
    extract_commands,
    keepalive_for,
)
from rovertrain.importers.donkey_format import (
    BadTub,
    Manifest,
    TubRecord,
    expected_records,
    is_human,
    parse_manifest,
    parse_record,
)
from rovertrain.importers.identity import derive_session_id, slug
from rovertrain.importers.pictures import PictureDecoder, picture_codec
from rovertrain.importers.report import Imported, ImportRun, Rejected
from rovertrain.importers.writer import WEBM_FILE, SessionMeta, Staging, Vp8Writer, recording_exists
from rovertrain.store.durable import disk_error
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    from av.video.frame import VideoFrame

MAX_MANIFEST_BYTES = 1 << 20
MAX_CATALOG_BYTES = 256 << 20
MAX_IMAGE_BYTES = 16 << 20
CONTROL_PROFILE = "donkeycar"
MOTION = ("throttle",)
"""A Donkeycar stops when its throttle returns to zero; steering alone does not move it."""


@dataclass
class SessionPlan:
    source: str
    session_id: str
    records: list[TubRecord]
    """The human's records, strictly increasing in time, each with an image file present."""
    control_records: list[TubRecord]
    """The human's records whose controls count (an unreadable image drops only the frame)."""
    dropped: Dropped = field(default_factory=Dropped)
    images: Path = Path()


@dataclass
class TubPlan:
    sessions: list[SessionPlan]
    dropped: Dropped
    """Records lost before they could be assigned to a session (unreadable catalogs)."""


def _tub_name(tub: Path) -> str:
    return slug(tub.resolve().name) or "tub"


def _read_catalog_lines(path: Path) -> Iterator[bytes]:
    data = read_small(path, MAX_CATALOG_BYTES)
    for line in data.split(b"\n"):
        line = line.rstrip(b"\r")
        if line.strip():
            yield line


def _catalog_file(tub: Path, name: str) -> Path:
    if not valid_identifier(name):
        raise SkipSession("unsafe_path", f"catalog name {name[:60]!r} is not a plain file name")
    return tub / name


def read_tub(tub: Path) -> tuple[Manifest, list[TubRecord], Dropped]:
    """The manifest and every parsed record (deleted ones included); SkipSession when the
    manifest cannot be read. A catalog that cannot be read drops its records, counted."""
    # The tub itself may be a link the user named; what is inside it must not be.
    if not os.path.exists(tub):
        raise SkipSession("missing_recording", f"no tub folder {tub}")
    if not os.path.isdir(tub):
        raise SkipSession("invalid_recording", f"{tub} is not a folder")
    try:
        manifest = parse_manifest(read_small(tub / "manifest.json", MAX_MANIFEST_BYTES))
    except BadTub as error:
        raise SkipSession("invalid_recording", str(error)) from None
    dropped = Dropped()
    records: list[TubRecord] = []
    for number, name in enumerate(manifest.catalog_paths):
        try:
            lines = list(_read_catalog_lines(_catalog_file(tub, name)))
        except SkipSession as error:
            reason = "too_large" if error.code == "too_large" else "unreadable_catalog"
            dropped.add(reason, expected_records(manifest, number))
            continue
        for line in lines:
            parsed = parse_record(line)
            if isinstance(parsed, str):
                dropped.add(parsed)
            else:
                records.append(parsed)
    return manifest, records, dropped


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def image_files(images: Path) -> dict[str, bool]:
    """The names in `images/`, each True when it is a regular file (not a link, a folder, a
    FIFO): one directory scan instead of a stat per record. Sizes are checked on reading."""
    try:
        with os.scandir(images) as entries:
            return {entry.name: entry.is_file(follow_symlinks=False) for entry in entries}
    except OSError:
        return {}


def _image_problem(files: dict[str, bool], name: str) -> str | None:
    """Why a record's image cannot be used before reading it, or None."""
    if not valid_identifier(name):
        return "unsafe_path"
    regular = files.get(name)
    if regular is None:
        return "missing_image"
    return None if regular else "unsafe_path"


def plan_tub(tub: Path) -> TubPlan:
    """Split a tub into its Donkeycar sessions and choose what each recording keeps."""
    manifest, records, lost = read_tub(tub)
    images = tub / "images"
    files = image_files(images)
    groups: dict[str, list[TubRecord]] = {}
    for record in records:
        groups.setdefault(record.session, []).append(record)
    plans = []
    for session, group in groups.items():
        group.sort(key=lambda record: record.index)
        first = group[0]
        identity: list[object] = [manifest.created_at, session, first.index, first.timestamp_ms]
        session_id = derive_session_id("donkey", session or _tub_name(tub), identity)
        plan = SessionPlan(str(tub), session_id, [], [], images=images)
        latest = None
        for record in group:
            if record.index in manifest.deleted_indexes:
                plan.dropped.add("deleted")
                continue
            if not is_human(record):
                plan.dropped.add("pilot")
                continue
            if latest is not None and record.timestamp_ms <= latest:
                plan.dropped.add(
                    "duplicate_time" if record.timestamp_ms == latest else "time_backwards"
                )
                continue
            latest = record.timestamp_ms
            plan.control_records.append(record)
            problem = _image_problem(files, record.image)
            if problem is None:
                plan.records.append(record)
            else:
                plan.dropped.add(problem)
        plans.append(plan)
    return TubPlan(plans, lost)


def samples(records: list[TubRecord], start_ms: float) -> list[ControlSample]:
    return [
        ControlSample(
            record.timestamp_ms - start_ms, {"angle": record.angle, "throttle": record.throttle}
        )
        for record in records
    ]


def command_rules(records: list[TubRecord], tolerance: float, keepalive_ms: float) -> CommandRules:
    times = [record.timestamp_ms for record in records]
    return CommandRules(tolerance, keepalive_for(times, keepalive_ms), MOTION)


class JpegDecoder:
    """JPEG files to frames, or why one is dropped."""

    def __init__(self) -> None:
        self.pictures = PictureDecoder()

    def decode(self, path: Path) -> VideoFrame | str:
        """The frame, or the reason (a str) it is dropped: `too_large`, `corrupt_image`."""
        try:
            with open_regular(path, MAX_IMAGE_BYTES) as stream:
                data = stream.read(MAX_IMAGE_BYTES + 1)
        except SkipSession as error:
            return "too_large" if error.code == "too_large" else "unreadable_image"
        except OSError:
            return "unreadable_image"
        if picture_codec(data[:8]) != "mjpeg":
            return "corrupt_image"
        return self.pictures.decode(data, "mjpeg")


@dataclass(frozen=True)
class DonkeyOptions:
    root: Path
    dry_run: bool
    tolerance: float
    keepalive_ms: float
    rover_id: str
    threads: int = 1


def import_tubs(tubs: list[Path], options: DonkeyOptions, run: ImportRun) -> None:
    for tub in tubs:
        try:
            plan = plan_tub(tub)
        except SkipSession as error:
            run.skipped(Rejected(str(tub), f"donkey-{_tub_name(tub)}", error.code, error.reason))
            continue
        if not plan.sessions:
            reason = "the tub holds no readable record"
            if plan.dropped.counts:
                reason += (
                    " (" + ", ".join(f"{n} {r}" for r, n in plan.dropped.as_dict().items()) + ")"
                )
            run.skipped(Rejected(str(tub), f"donkey-{_tub_name(tub)}", "invalid_recording", reason))
            continue
        for number, session in enumerate(plan.sessions):
            if number == 0:
                session.dropped.merge(plan.dropped)  # lost catalogs: counted once per tub
            import_session(session, options, run)


def import_session(plan: SessionPlan, options: DonkeyOptions, run: ImportRun) -> None:
    if not plan.control_records:
        reason = (
            "no human-driven record ("
            + ", ".join(f"{count} {why}" for why, count in plan.dropped.as_dict().items())
            + ")"
        )
        run.skipped(Rejected(plan.source, plan.session_id, "no_windows", reason))
        return
    if not plan.records:
        reason = f"none of the {len(plan.control_records)} human records has a usable image ("
        reason += ", ".join(f"{count} {why}" for why, count in plan.dropped.as_dict().items())
        run.skipped(Rejected(plan.source, plan.session_id, "invalid_recording", reason + ")"))
        return
    start_ms = plan.control_records[0].timestamp_ms
    rules = command_rules(plan.control_records, options.tolerance, options.keepalive_ms)
    commands = extract_commands(samples(plan.control_records, start_ms), rules)
    target = Layout(options.root).recording_dir(plan.session_id)
    existing = recording_exists(options.root, plan.session_id)
    if existing or options.dry_run:
        run.imported(
            Imported(
                source=plan.source,
                session_id=plan.session_id,
                frames=len(plan.records),
                commands=len(commands),
                dropped=plan.dropped.as_dict(),
                path=str(target),
                dry_run=options.dry_run,
                existing=existing,
            )
        )
        return
    meta = SessionMeta(
        session_id=plan.session_id,
        rover_id=options.rover_id,
        control_profile=CONTROL_PROFILE,
        started_at_ms=start_ms,
        video_file=WEBM_FILE,
        offset_ms=0.0,
    )
    try:
        frames, written = _write(plan, options, meta, commands, start_ms, run)
    except OSError as error:
        raise disk_error(error, f"recording {plan.session_id}") from None
    if frames == 0:
        reason = f"none of the {len(plan.records)} images could be decoded"
        run.skipped(Rejected(plan.source, plan.session_id, "invalid_recording", reason))
        return
    run.imported(
        Imported(
            source=plan.source,
            session_id=plan.session_id,
            frames=frames,
            commands=len(commands),
            dropped=plan.dropped.as_dict(),
            path=str(target),
            dry_run=False,
            existing=not written,
        )
    )


def _write(
    plan: SessionPlan,
    options: DonkeyOptions,
    meta: SessionMeta,
    commands: list[Command],
    start_ms: float,
    run: ImportRun,
) -> tuple[int, bool]:
    """Encode the frames and write the recording; (frames, False when it already existed)."""
    decoder = JpegDecoder()
    with Staging(options.root, plan.session_id) as staging:
        with Vp8Writer(staging.path / WEBM_FILE, options.threads) as writer:
            total = len(plan.records)
            for number, record in enumerate(plan.records):
                frame = decoder.decode(plan.images / record.image)
                if isinstance(frame, str):
                    plan.dropped.add(frame)
                elif not writer.add(frame, record.timestamp_ms - start_ms):
                    plan.dropped.add("duplicate_time")
                run.progress.show(plan.session_id, number + 1, total)
            frames = writer.frames
        if frames == 0:
            return 0, False
        return frames, staging.commit(meta, commands)
