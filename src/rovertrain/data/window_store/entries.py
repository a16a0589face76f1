"""The window store's entries: converted tick frames per session under `root/training/cache/`.

An entry is `<name>.frames` (raw uint8 frames, N×H×W×C) plus `<name>.json` (ticks, frame
times, decode diagnostics and the key), written by the decoder child through temp files and
renames, json last. An entry is used only if its key matches the recording's identity and the
decoder/input versions, and its frames file has exactly the expected size; anything else is
ignored and rebuilt. The store is bounded by `cacheMaxMegabytes`, least recently used first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.observation import INPUT_VERSION, OBS_CHANNELS, OBS_HEIGHT, OBS_WIDTH
from rovertrain.data.recording import Recording
from rovertrain.store.layout import Layout
from rovertrain.video.decode import DECODER_VERSION
from rovertrain.video.source import FRAME_BYTES


@dataclass(frozen=True)
class StoreEntry:
    name: str
    key: str
    frames_path: Path
    meta_path: Path


def store_dir(root: Path) -> Path:
    return Layout(root).window_store


def entry_for(root: Path, recording: Recording) -> StoreEntry:
    info = os.stat(recording.video_path, follow_symlinks=False)
    identity = {
        "video": recording.video_path.name,
        "size": info.st_size,
        "mtimeNs": info.st_mtime_ns,
        "inode": info.st_ino,
        "offsetMs": recording.video_offset_ms,
        "decoder": DECODER_VERSION,
        "input": [INPUT_VERSION, OBS_WIDTH, OBS_HEIGHT, OBS_CHANNELS],
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    name = f"{recording.session_id}-{key[:20]}"
    layout = Layout(root)
    return StoreEntry(name, key, layout.entry_frames(name), layout.entry_meta(name))


@dataclass
class StoredFrames:
    frames_path: Path
    ticks: np.ndarray  # int64 [N]
    frame_times: np.ndarray  # float64 [N]
    stats: JsonObject
    """The decoder's diagnostics as stored (`DecodeStats.to_json`); the dataset adds to them."""

    @property
    def frames(self) -> np.ndarray:
        """uint8 [N, H, W, C], memory-mapped when asked: a map holds a file descriptor, and a
        job that planned a thousand sessions must not hold a thousand (open files stay
        bounded by the sessions being gathered, not by the sessions listed)."""
        shape = (len(self.ticks), OBS_HEIGHT, OBS_WIDTH, OBS_CHANNELS)
        return np.memmap(self.frames_path, dtype=np.uint8, mode="r", shape=shape)


def load(entry: StoreEntry) -> StoredFrames | None:
    """The stored frames, or None when absent, corrupt or foreign."""
    try:
        meta: object = json.loads(entry.meta_path.read_text())
        if not isinstance(meta, dict) or meta.get("key") != entry.key:
            return None
        stats = meta["stats"]
        if not isinstance(stats, dict):
            return None
        ticks = np.asarray(meta["ticks"], dtype=np.int64)
        frame_times = np.asarray(meta["frameTimes"], dtype=np.float64)
        count = len(ticks)
        if count == 0 or len(frame_times) != count:
            return None
        if entry.frames_path.stat().st_size != count * FRAME_BYTES:
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.meta_path)
        return StoredFrames(entry.frames_path, ticks, frame_times, dict(stats))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def evict(root: Path, max_bytes: int, keep: Mapping[str, int]) -> tuple[int, int]:
    """Remove least recently used entries outside `keep` until the store fits.

    `keep` maps the entries to keep to their sizes in bytes, known from the store's manifest,
    so only the other entries are stat'ed: the cost grows with the leftovers, not with the
    sessions stored. Returns (bytes removed, bytes left).
    """
    directory = store_dir(root)
    try:
        with os.scandir(directory) as found:
            names = {
                Path(entry.name).stem
                for entry in found
                if entry.name.endswith((".json", ".frames")) and not entry.name.startswith(".")
            }
    except OSError:
        return 0, 0
    total = sum(keep[name] for name in names if name in keep)
    entries = []
    for name in names - keep.keys():
        meta, frames = directory / f"{name}.json", directory / f"{name}.frames"
        size, used = 0, 0.0  # used: the metadata's time, touched by every `load`
        with contextlib.suppress(OSError):
            info = meta.stat()
            size, used = info.st_size, info.st_mtime
        with contextlib.suppress(OSError):
            size += frames.stat().st_size
        total += size
        entries.append((used, name, size))
    removed = 0
    for _used, name, size in sorted(entries):
        if total <= max_bytes:
            break
        remove_entry(root, name)
        total -= size
        removed += size
    return removed, total


def remove_entry(root: Path, name: str) -> None:
    """Remove an entry, metadata first: a half-removed entry is never loaded."""
    layout = Layout(root)
    for path in (layout.entry_meta(name), layout.entry_frames(name)):
        with contextlib.suppress(OSError):
            path.unlink()


def remove_temporaries(root: Path) -> None:
    """Leftovers of decoder children that died mid-write."""
    directory = store_dir(root)
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    path.unlink()
