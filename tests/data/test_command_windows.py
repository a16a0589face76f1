"""A session's command windows: the windows a type is the target of, never its commands."""

from __future__ import annotations

from pathlib import Path

from media import add_session, encode_video
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.data.dataset import DatasetRequest, Unwatched, build_dataset
from rovertrain.job.config import parse_job
from rovertrain.learn.metrics import natural_frequencies
from rovertrain.protocol.events import EventStream


def test_a_page_sending_every_20_ms_fires_each_window_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    video = encode_video(tmp_path / "v.webm", "libvpx", "webm", seconds=2.0)
    every_20_ms = [
        {"t": t, "type": "drive", "values": {"speed": 0.5, "turn": 0.0}} for t in range(0, 2000, 20)
    ]
    once_a_second = [
        {"t": t, "type": "drive", "values": {"speed": 0.5, "turn": 0.0}} for t in (0, 1000)
    ]
    sessions = {"page-a": every_20_ms, "page-b": every_20_ms, "slow-c": once_a_second}
    for session_id, commands in sessions.items():
        add_session(root, session_id, video, commands=commands)
    config = parse_job({"root": str(root), "sessions": list(sessions)}).config
    request = DatasetRequest(
        root, list(sessions), initial_schema(), 0, config.execution.threads, config.decoding,
        config.sampling,
    )  # fmt: skip
    dataset = build_dataset(request, EventStream(None), Unwatched())
    drive = [slot["type"] for slot in dataset.schema].index("drive")
    results = {result.session_id: result for result in dataset.sessions}
    assert set(results) == set(sessions)
    for session_id in ("page-a", "page-b"):
        result = results[session_id]
        assert result.commands == 100
        assert result.command_windows[drive] == result.usable_windows > 0
        assert result.diagnostics()["commandWindows"][drive] == result.usable_windows
    assert results["slow-c"].command_windows[drive] == 2
    usable, windows = dataset.natural_command_windows()
    assert 0.0 < natural_frequencies(usable, windows)[drive] <= 1.0
