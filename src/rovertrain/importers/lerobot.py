"""`rovertrain import lerobot`: a local LeRobotDataset (v3) as recordings, one per episode.

The format (huggingface/lerobot, src/lerobot/datasets/utils.py and lerobot_dataset.py):
`meta/info.json` (codebase_version "v3.x", fps, robot_type, features, and the `data_path` and
`video_path` templates over chunk_index/file_index/video_key), per-episode metadata in
`meta/episodes/chunk-*/file-*.parquet` (episode_index, length, data/chunk_index,
data/file_index, videos/<key>/chunk_index, file_index, from_timestamp, to_timestamp), frame
rows in `data/...parquet` (episode_index, timestamp in seconds within the episode, action),
and videos in `videos/<key>/...mp4` holding many episodes one after another.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from rovertrain.contracts.errors import ErrorCode, RovertrainError, SkipSession
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.data.recording import read_small
from rovertrain.importers.actionmap import DEFAULT_MAP, ActionMap, parse_action_map, parse_episodes
from rovertrain.importers.commands import (
    STOP,
    CommandRules,
    ControlSample,
    extract_commands,
    keepalive_for,
)
from rovertrain.importers.identity import derive_session_id, slug
from rovertrain.importers.report import Imported, ImportRun, Rejected
from rovertrain.importers.segment import cut_segment
from rovertrain.importers.writer import SessionMeta, Staging, recording_exists
from rovertrain.store.durable import disk_error
from rovertrain.store.layout import Layout

MAX_INFO_BYTES = 1 << 20
MAX_ACTION_MAP_BYTES = 64 << 10
MAX_PARQUET_BYTES = 1 << 30
MAX_VIDEO_BYTES = 16 << 30
MKV_FILE = "camera.mkv"
CONTROL_PROFILE = "lerobot"
DEFAULT_DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
DEFAULT_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"


@dataclass(frozen=True)
class LerobotOptions:
    root: Path
    dry_run: bool
    tolerance: float
    keepalive_ms: float
    episodes: str | None
    action_map: str | None
    camera: str | None
    rover_id: str | None


@dataclass(frozen=True)
class Info:
    fps: float
    robot_type: str | None
    data_path: str
    video_path: str
    camera: str
    action_names: list[str]
    action_width: int


@dataclass(frozen=True)
class Episode:
    index: int
    length: int
    data_file: str
    video_file: str
    from_s: float
    to_s: float


def _pyarrow() -> ModuleType:
    """`pyarrow.parquet` (untyped: what it returns is checked where it is used)."""
    try:
        return importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise RovertrainError(
            ErrorCode.MISSING_DEPENDENCY,
            "Importing LeRobot datasets needs pyarrow: pip install 'rovertrain[import]'.",
        ) from None


def _json_file(path: Path, limit: int, what: str) -> object:
    try:
        return parse_json(read_small(path, limit).decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise SkipSession("invalid_recording", f"{what} is not UTF-8") from None
    except BadJson as error:
        raise SkipSession("invalid_recording", f"{what}: {error}") from None


def read_info(dataset: Path, camera: str | None) -> Info:
    info = _json_file(dataset / "meta" / "info.json", MAX_INFO_BYTES, "meta/info.json")
    if not isinstance(info, dict):
        raise SkipSession("invalid_recording", "meta/info.json is not an object")
    version = info.get("codebase_version")
    if not isinstance(version, str) or not version.startswith("v3"):
        raise SkipSession(
            "invalid_recording", f"codebase_version {version!r} is not v3 (only v3 is read)"
        )
    features = info.get("features")
    fps = info.get("fps")
    if not isinstance(features, dict) or not isinstance(fps, int | float) or fps <= 0:
        raise SkipSession("invalid_recording", "meta/info.json lacks features or fps")
    videos = [
        key
        for key, spec in features.items()
        if isinstance(spec, dict) and spec.get("dtype") == "video"
    ]
    if camera is None:
        if not videos:
            raise SkipSession("no_video", "the data set has no video feature")
        camera = videos[0]
    elif camera not in videos:
        raise RovertrainError(
            ErrorCode.USAGE, f"--camera: {camera!r} is not a video feature (have {videos})"
        )
    action = features.get("action")
    if not isinstance(action, dict) or not isinstance(action.get("shape"), list):
        raise SkipSession("invalid_recording", "meta/info.json: features.action has no shape")
    shape = action["shape"]
    width = shape[0] if len(shape) == 1 and isinstance(shape[0], int) else 0
    names = action.get("names")
    names = [str(name) for name in names] if isinstance(names, list) else []
    robot = info.get("robot_type")
    return Info(
        fps=float(fps),
        robot_type=robot if isinstance(robot, str) and robot else None,
        data_path=str(info.get("data_path") or DEFAULT_DATA_PATH),
        video_path=str(info.get("video_path") or DEFAULT_VIDEO_PATH),
        camera=camera,
        action_names=names,
        action_width=width,
    )


def _inside(dataset: Path, relative: str) -> str:
    """`relative` if it names a file inside the data set (no `..`, not absolute)."""
    parts = Path(relative).parts
    if Path(relative).is_absolute() or ".." in parts or not parts:
        raise SkipSession("unsafe_path", f"{relative!r} leads outside the data set")
    return relative


def read_episodes(dataset: Path, info: Info) -> list[Episode]:
    parquet = _pyarrow()
    folder = dataset / "meta" / "episodes"
    files = sorted(folder.glob("chunk-*/file-*.parquet"))
    if not files:
        raise SkipSession("invalid_recording", "no meta/episodes/chunk-*/file-*.parquet")
    prefix = f"videos/{info.camera}/"
    episodes: list[Episode] = []
    for path in files:
        try:
            table = parquet.read_table(path, columns=None)
        except (OSError, ValueError) as error:
            raise SkipSession(
                "invalid_recording", f"{path.relative_to(dataset)}: {error}"
            ) from None
        wanted = [name for name in table.column_names if not name.startswith("stats/")]
        for row in table.select(wanted).to_pylist():
            try:
                data_file = info.data_path.format(
                    chunk_index=int(row["data/chunk_index"]), file_index=int(row["data/file_index"])
                )
                video_file = info.video_path.format(
                    video_key=info.camera,
                    chunk_index=int(row[prefix + "chunk_index"]),
                    file_index=int(row[prefix + "file_index"]),
                )
                episode = Episode(
                    index=int(row["episode_index"]),
                    length=int(row["length"]),
                    data_file=_inside(dataset, data_file),
                    video_file=_inside(dataset, video_file),
                    from_s=float(row[prefix + "from_timestamp"]),
                    to_s=float(row[prefix + "to_timestamp"]),
                )
            except (KeyError, TypeError, ValueError, IndexError) as error:
                raise SkipSession(
                    "invalid_recording", f"{path.relative_to(dataset)}: episode row lacks {error}"
                ) from None
            episodes.append(episode)
    episodes.sort(key=lambda episode: episode.index)
    return episodes


class FrameRows:
    """The frame rows of the data files, each file read once (episode_index, timestamp, action)."""

    def __init__(self, dataset: Path):
        self.dataset = dataset
        self.cache: dict[str, dict[int, list[tuple[float, list[float]]]]] = {}

    def of(self, episode: Episode) -> list[tuple[float, list[float]]]:
        if episode.data_file not in self.cache:
            self.cache = {episode.data_file: self._read(episode.data_file)}  # files come in order
        return self.cache[episode.data_file].get(episode.index, [])

    def _read(self, relative: str) -> dict[int, list[tuple[float, list[float]]]]:
        parquet = _pyarrow()
        path = self.dataset / relative
        try:
            if os.path.getsize(path) > MAX_PARQUET_BYTES:
                raise SkipSession(
                    "too_large", f"{relative} is larger than {MAX_PARQUET_BYTES} bytes"
                )
            table = parquet.read_table(path, columns=["episode_index", "timestamp", "action"])
        except OSError as error:
            raise SkipSession("invalid_recording", f"cannot read {relative}: {error}") from None
        except (ValueError, KeyError) as error:
            raise SkipSession("invalid_recording", f"{relative}: {error}") from None
        rows: dict[int, list[tuple[float, list[float]]]] = {}
        columns = table.to_pydict()
        for index, stamp, action in zip(
            columns["episode_index"], columns["timestamp"], columns["action"], strict=True
        ):
            rows.setdefault(int(index), []).append((float(stamp), list(action)))
        for items in rows.values():
            items.sort(key=lambda item: item[0])
        return rows


def load_action_map(path: str | None, info: Info) -> ActionMap:
    document: object = DEFAULT_MAP
    if path is not None:
        try:
            document = _json_file(Path(path), MAX_ACTION_MAP_BYTES, f"--action-map {path}")
        except SkipSession as error:
            raise RovertrainError(ErrorCode.USAGE, error.reason) from None
    return parse_action_map(document, info.action_names, info.action_width)


def episode_identity(info: Info, episode: Episode, rows: list[tuple[float, list[float]]]) -> str:
    """A digest of what the episode *is* (its frames' times and actions, its video span)."""
    digest = hashlib.sha256()
    digest.update(
        repr((info.fps, info.camera, episode.length, episode.from_s, episode.to_s)).encode()
    )
    for stamp, action in rows:
        digest.update(repr((round(stamp, 6), [round(value, 6) for value in action])).encode())
    return digest.hexdigest()


def import_dataset(dataset: Path, options: LerobotOptions, run: ImportRun) -> None:
    selection = parse_episodes(options.episodes) if options.episodes is not None else None
    label = slug(dataset.resolve().name) or "dataset"
    try:
        info = read_info(dataset, options.camera)
        action_map = load_action_map(options.action_map, info)
        episodes = read_episodes(dataset, info)
    except SkipSession as error:
        run.skipped(Rejected(str(dataset), f"lerobot-{label}", error.code, error.reason))
        return
    rows = FrameRows(dataset)
    if selection is not None:
        for missing in sorted(selection - {episode.index for episode in episodes})[:100]:
            source, session_id = f"{dataset}#episode={missing}", f"lerobot-{label}-ep{missing}"
            reason = f"the data set has no episode {missing}"
            run.skipped(Rejected(source, session_id, "missing_recording", reason))
    for episode in episodes:
        if selection is not None and episode.index not in selection:
            continue
        source = f"{dataset}#episode={episode.index}"
        fallback_id = f"lerobot-{slug(info.robot_type or label)}-ep{episode.index}"
        try:
            import_episode(dataset, info, action_map, episode, rows, options, run)
        except SkipSession as error:
            run.skipped(Rejected(source, fallback_id, error.code, error.reason))


def import_episode(
    dataset: Path,
    info: Info,
    action_map: ActionMap,
    episode: Episode,
    rows: FrameRows,
    options: LerobotOptions,
    run: ImportRun,
) -> None:
    frames = rows.of(episode)
    source = f"{dataset}#episode={episode.index}"
    if not frames:
        raise SkipSession("no_windows", f"episode {episode.index} has no frame rows")
    dropped: dict[str, int] = {}
    samples = []
    for stamp, action in frames:
        if len(action) < info.action_width or not all(value == value for value in action):
            dropped["invalid_action"] = dropped.get("invalid_action", 0) + 1
            continue
        samples.append(ControlSample(stamp * 1000.0, action_map.apply(action)))
    times = [sample.t for sample in samples]
    keepalive = keepalive_for(times, options.keepalive_ms)
    rules = CommandRules(options.tolerance, keepalive, action_map.motion, drive=action_map.command)
    commands = extract_commands(samples, rules)
    label = f"{info.robot_type or 'lerobot'}-ep{episode.index}"
    session_id = derive_session_id("lerobot", label, [episode_identity(info, episode, frames)])
    target = Layout(options.root).recording_dir(session_id)
    existing = recording_exists(options.root, session_id)
    if existing or options.dry_run:
        run.imported(
            Imported(
                source=source,
                session_id=session_id,
                frames=episode.length,
                commands=len(commands),
                dropped=dropped,
                path=str(target),
                dry_run=options.dry_run,
                existing=existing,
            )
        )
        return
    run.progress.show(session_id, 0, episode.length, force=True)
    roles = {STOP: "stop", action_map.command: "movement"}
    try:
        with Staging(options.root, session_id) as staging:
            segment = cut_segment(
                dataset / episode.video_file,
                staging.path / MKV_FILE,
                start_s=episode.from_s,
                end_s=episode.to_s,
                max_bytes=MAX_VIDEO_BYTES,
            )
            meta = SessionMeta(
                session_id=session_id,
                rover_id=options.rover_id or info.robot_type or "lerobot",
                control_profile=CONTROL_PROFILE,
                started_at_ms=None,
                video_file=MKV_FILE,
                offset_ms=segment.offset_ms,
                command_roles=roles,
            )
            written = staging.commit(meta, commands)
    except OSError as error:
        raise disk_error(error, f"recording {session_id}") from None
    run.imported(
        Imported(
            source=source,
            session_id=session_id,
            frames=segment.frames,
            commands=len(commands),
            dropped=dropped,
            path=str(target),
            dry_run=False,
            existing=not written,
            video=segment.event_fields(),
        )
    )
