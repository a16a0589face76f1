"""`rovertrain import rosbag`: ROS 1 and ROS 2 bags as recordings, read with `rosbags`.

One bag becomes one recording, or one per part where its camera pauses longer than the map's
`splitGapSeconds`. Reading happens twice: a survey of every camera and command message (times
and values, no decoding) that `rosbag_plan` turns into parts and commands, then, per part,
the camera messages again, decoded and encoded at their times into a VP8 WebM
(`writer.Vp8Writer`, as the Donkeycar import does). Damage found while reading skips the bag
with its reason; the other bags go on.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rovertrain.contracts.command_schema import POLICY
from rovertrain.contracts.errors import ErrorCode, RovertrainError, SkipSession
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.data.recording import Command, driving_model, read_small
from rovertrain.importers.commands import CommandRules, Dropped, extract_commands, keepalive_for
from rovertrain.importers.identity import derive_session_id, slug
from rovertrain.importers.report import Imported, ImportRun, Rejected
from rovertrain.importers.rosbag_images import CompressedDecoder, raw_frame
from rovertrain.importers.rosbag_map import (
    COMPRESSED,
    DEFAULT_VALUES,
    BagMap,
    parse_map,
    with_topics,
)
from rovertrain.importers.rosbag_plan import (
    NS_PER_MS,
    TimedSample,
    message_time,
    mux,
    part_samples,
    split_parts,
    topic_clock,
    write_order,
)
from rovertrain.importers.rosbag_read import (
    Resolved,
    Survey,
    bag_errors,
    bag_paths,
    listed_topics,
    open_bag,
    resolve,
    survey,
    topic_connections,
    topic_rows,
    words,
)
from rovertrain.importers.writer import WEBM_FILE, SessionMeta, Staging, Vp8Writer, recording_exists
from rovertrain.store.durable import disk_error
from rovertrain.store.layout import Layout

if TYPE_CHECKING:
    from av.video.frame import VideoFrame
    from rosbags.highlevel import AnyReader
    from rosbags.interfaces import Connection

CONTROL_PROFILE = "ros"
MIN_PART_FRAMES = 10


@dataclass(frozen=True)
class RosbagOptions:
    root: Path
    dry_run: bool
    tolerance: float
    keepalive_ms: float
    rover_id: str
    bag_map: BagMap
    driven_by: str | None = None
    """`--driven-by`: the model that drove the `by: policy` topics (session.json `drivenBy`)."""
    threads: int = 2


MAX_MAP_BYTES = 64 << 10


def read_map(path: str | None, image: str | None, commands: Sequence[str]) -> BagMap:
    """The map file (if any) with the command line's topics applied; a usage error (exit 2)
    for a map that cannot be read or breaks a rule."""
    bag_map = BagMap()
    if path is not None:
        try:
            text = read_small(Path(path), MAX_MAP_BYTES).decode("utf-8-sig")
            bag_map = parse_map(parse_json(text))
        except SkipSession as error:
            raise RovertrainError(ErrorCode.USAGE, f"--map {path}: {error.reason}") from None
        except (UnicodeDecodeError, BadJson) as error:
            raise RovertrainError(ErrorCode.USAGE, f"--map {path}: {error}") from None
    return with_topics(bag_map, image, commands)


def driven_by_model(model: str | None) -> str | None:
    """`--driven-by` checked as session.json's `drivenBy.model` reads it (a usage error
    otherwise: the recordings would say no model)."""
    if model is not None and driving_model({"model": model}) is None:
        raise RovertrainError(ErrorCode.USAGE, f"--driven-by {model[:60]!r}: not a model id")
    return model


@dataclass
class Part:
    number: int
    session_id: str
    order: list[int]
    """Camera messages (survey indexes) to write, in the order to write them."""
    times: list[int]
    """Their times (ns), increasing."""
    commands: list[Command]
    dropped: Dropped


@dataclass
class BagPlan:
    parts: list[Part]
    clocks: dict[str, str]
    frame_receive: list[int]
    """Each camera message's receive time, in survey order (to find a part's messages again)."""


def _motion(resolved: Resolved) -> tuple[str, ...]:
    entry, topic, _ = resolved.commands[0]
    if entry.motion is not None:
        return entry.motion
    defaults = DEFAULT_VALUES.get(topic.msgtype)
    return defaults.motion if defaults is not None and entry.values is None else ()


def plan_bag(
    start_ns: int,
    resolved: Resolved,
    found: Survey,
    options: RosbagOptions,
) -> BagPlan:
    """The parts of a surveyed bag and each one's commands (pure past the survey)."""
    bag_map = options.bag_map
    readable = [n for n in range(len(found.frames)) if n not in found.unreadable]
    clock = topic_clock([found.frames[n] for n in readable])
    clocks = {resolved.image.name: clock}
    frame_times = [message_time(frame, clock) for frame in found.frames]
    ordered = write_order([frame_times[n] for n in readable])
    ordered.order = [readable[n] for n in ordered.order]  # back to survey indexes
    dropped = Dropped()
    dropped.merge(found.dropped)
    dropped.merge(ordered.dropped)
    streams = []
    for (entry, topic, _), messages in zip(resolved.commands, found.commands, strict=True):
        clock = clocks[topic.name] = topic_clock([stamped for stamped, _ in messages])
        stream = [
            TimedSample(message_time(stamped, clock), values, entry.by)
            for stamped, values in messages
        ]
        stream.sort(key=lambda sample: sample.time_ns)
        streams.append(stream)
    samples = mux(streams, round(bag_map.mux_timeout_ms * NS_PER_MS))
    times = [frame_times[index] for index in ordered.order]
    parts = []
    for start, end in split_parts(times, round(bag_map.split_gap_s * 1e9)):
        if end - start < MIN_PART_FRAMES:
            dropped.add("short_part", end - start)
            continue
        parts.append((start, end))
    command_topics = [topic.name for _, topic, _ in resolved.commands]
    plans = []
    for number, (start, end) in enumerate(parts, 1):
        first, last = times[start], times[end - 1]
        chosen = part_samples(samples, first, last)
        rules = CommandRules(
            options.tolerance,
            keepalive_for([sample.t for sample in chosen], options.keepalive_ms),
            _motion(resolved),
            silence_ms=bag_map.silence_ms,
        )
        plans.append(
            Part(
                number,
                session_id(start_ns, resolved.image.name, first, end - start, command_topics),
                ordered.order[start:end],
                times[start:end],
                extract_commands(chosen, rules, end=(last - first) / NS_PER_MS),
                Dropped(),
            )
        )
    if plans:
        plans[0].dropped.merge(dropped)  # the bag's losses, counted once
    receive = [frame.receive_ns for frame in found.frames]
    return BagPlan(plans, clocks, receive)


def session_id(
    bag_start_ns: int, image_topic: str, first_ns: int, frames: int, command_topics: Sequence[str]
) -> str:
    """A part's session id: what the drive is (when and how long the camera ran, what carried
    its commands), not the bag's name or storage, so the same drive converted or renamed is
    one session."""
    identity: list[object] = [bag_start_ns, image_topic, first_ns, frames, sorted(command_topics)]
    return derive_session_id("rosbag", part_label(first_ns), identity)


def part_label(first_ns: int) -> str:
    """A session id's readable part: when its first frame was taken (UTC), not the bag's file
    name, so a renamed or moved bag imports to the same ids."""
    moment = datetime.fromtimestamp(first_ns / 1e9, UTC)
    return moment.strftime("%Y%m%d-%H%M%S") if moment.year > 1970 else "ros"


def _label(bag: Path) -> str:
    name = bag.name
    for suffix in (".bag", ".db3", ".mcap"):
        name = name.removesuffix(suffix)
    return slug(name) or "bag"


def import_bags(bags: Sequence[Path], options: RosbagOptions, run: ImportRun) -> None:
    """Each bag in turn; a bag that cannot be used is `skipped`, the next one goes on."""
    try:
        import rosbags  # noqa: F401
    except ImportError:
        raise RovertrainError(
            ErrorCode.MISSING_DEPENDENCY,
            "`rovertrain import rosbag` needs the rosbags library: pip install 'rovertrain[rosbag]'",
        ) from None
    for bag in bags:
        try:
            import_bag(bag, options, run)
        except SkipSession as error:
            run.skipped(Rejected(str(bag), f"rosbag-{_label(bag)}", error.code, error.reason))


def import_bag(bag: Path, options: RosbagOptions, run: ImportRun) -> None:
    paths, storage = bag_paths(bag)
    with open_bag(paths) as reader:
        topics = listed_topics(reader)
        resolved = resolve(options.bag_map, topics)
        try:
            found = survey(reader, resolved)
        except bag_errors() as error:
            raise SkipSession("invalid_recording", f"damaged bag: {words(error)}") from None
        plan = plan_bag(reader.start_time, resolved, found, options)
        if not plan.parts:
            raise SkipSession(
                "no_windows",
                f"{resolved.image.name}: {len(found.frames)} camera messages, no stretch of "
                f"{MIN_PART_FRAMES} frames or more",
            )
        described = {
            "storage": storage,
            "imageTopic": resolved.image.name,
            "commandTopics": {entry.topic: entry.by for entry, _, _ in resolved.commands},
            "clock": plan.clocks,
            "parts": len(plan.parts),
            "topics": topic_rows(topics, reader.duration),
        }
        for part in plan.parts:
            _import_part(reader, bag, resolved, plan, part, described, options, run)


def _import_part(
    reader: AnyReader,
    bag: Path,
    resolved: Resolved,
    plan: BagPlan,
    part: Part,
    described: dict[str, object],
    options: RosbagOptions,
    run: ImportRun,
) -> None:
    target = Layout(options.root).recording_dir(part.session_id)
    existing = recording_exists(options.root, part.session_id)
    fields = {**described, "part": part.number}

    def report(frames: int, dry_run: bool, existed: bool) -> None:
        path, dropped, sent = str(target), part.dropped.as_dict(), len(part.commands)
        item = Imported(str(bag), part.session_id, frames, sent, dropped, path, dry_run, existed)
        run.imported(replace(item, bag=fields))

    if existing or options.dry_run:
        report(len(part.order), options.dry_run, existing)
        return
    meta = SessionMeta(
        session_id=part.session_id,
        rover_id=options.rover_id,
        control_profile=CONTROL_PROFILE,
        started_at_ms=part.times[0] / NS_PER_MS,
        video_file=WEBM_FILE,
        offset_ms=0.0,
        driven_by=options.driven_by if any(c.by == POLICY for c in part.commands) else None,
    )
    try:
        frames, written = _write(reader, resolved, plan, part, meta, options, run)
    except OSError as error:  # the bag's own errors are SkipSession by now: this is writing
        raise disk_error(error, f"recording {part.session_id}") from None
    if frames == 0:
        reason = f"none of the {len(part.order)} camera messages could be decoded"
        raise SkipSession("invalid_recording", reason + f" ({part.dropped.as_dict()})")
    report(frames, False, not written)


def _frames(
    reader: AnyReader, connections: list[Connection], plan: BagPlan, part: Part
) -> Iterator[tuple[int, object]]:
    """(survey index, deserialised message) of the camera messages a part spans, in arrival
    order (the survey's), read again from the bag."""
    first = min(part.order)
    last = max(part.order)
    start, stop = plan.frame_receive[first], plan.frame_receive[last] + 1
    index = bisect.bisect_left(plan.frame_receive, start)
    messages = reader.messages(connections=connections, start=start, stop=stop)
    while True:
        try:
            connection, _, raw = next(messages)
        except StopIteration:
            return
        except bag_errors() as error:  # reading, not writing: this bag only
            raise SkipSession("invalid_recording", f"damaged bag: {words(error)}") from None
        try:
            yield index, reader.deserialize(raw, connection.msgtype)
        except bag_errors():
            yield index, "undecodable_message"
        index += 1


def _decode(message: Any, compressed: bool, decoder: CompressedDecoder) -> VideoFrame | str:
    if isinstance(message, str):  # why it could not be read
        return message
    if compressed:
        return decoder.decode(np.asarray(message.data, dtype=np.uint8))
    return raw_frame(
        str(message.encoding),
        int(message.width),
        int(message.height),
        int(message.step),
        bool(message.is_bigendian),
        np.asarray(message.data, dtype=np.uint8),
    )


def _write(
    reader: AnyReader,
    resolved: Resolved,
    plan: BagPlan,
    part: Part,
    meta: SessionMeta,
    options: RosbagOptions,
    run: ImportRun,
) -> tuple[int, bool]:
    """Decode the part's frames, encode them in order and write the recording; (frames,
    False when it already existed)."""
    connections = topic_connections(reader, resolved.image.name)
    compressed = resolved.image.msgtype == COMPRESSED
    decoder = CompressedDecoder()
    wanted = dict(zip(part.order, part.times, strict=True))
    pending: dict[int, VideoFrame | str] = {}  # decoded, waiting for the frames before them
    done = 0
    with Staging(options.root, part.session_id) as staging:
        with Vp8Writer(staging.path / WEBM_FILE, options.threads) as writer:
            for index, message in _frames(reader, connections, plan, part):
                if index not in wanted:
                    continue
                pending[index] = _decode(message, compressed, decoder)
                while done < len(part.order) and part.order[done] in pending:
                    turn = part.order[done]
                    frame = pending.pop(turn)
                    done += 1
                    if isinstance(frame, str):
                        part.dropped.add(frame)
                    elif not writer.add(frame, (wanted[turn] - part.times[0]) / NS_PER_MS):
                        part.dropped.add("duplicate_time")
                    run.progress.show(part.session_id, done, len(part.order))
            part.dropped.add("missing_frame", len(part.order) - done)
            frames = writer.frames
        if frames == 0:
            return 0, False
        return frames, staging.commit(meta, part.commands)
