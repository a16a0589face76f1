"""The per-session error boundary: an unexpected exception costs one session, never the job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from media import add_session, encode_video
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.data import session_read as dataset_module
from rovertrain.data.dataset import DatasetRequest, Unwatched, build_dataset
from rovertrain.job.config import parse_job
from rovertrain.protocol.events import EventStream


def test_an_unexpected_exception_skips_one_session_as_session_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    video = encode_video(tmp_path / "v.webm", "libvpx", "webm", seconds=2.0)
    for session_id in ("good-a", "broken", "good-b"):
        add_session(root, session_id, video)
    real = dataset_module.read_command_log

    def read_or_fail(recording: Any, *args: Any, **kwargs: Any) -> Any:
        if recording.session_id == "broken":
            raise ZeroDivisionError("a bug in the reader")
        return real(recording, *args, **kwargs)

    monkeypatch.setattr(dataset_module, "read_command_log", read_or_fail)
    stream = EventStream(None)
    events: list[dict[str, Any]] = []
    stream.listeners.append(events.append)
    job = parse_job({"root": str(root), "sessions": ["good-a", "broken", "good-b"]})
    config = job.config
    sessions = ["good-a", "broken", "good-b"]
    request = DatasetRequest(
        root, sessions, initial_schema(), 0, config.execution.threads, config.decoding,
        config.sampling,
    )  # fmt: skip
    result = build_dataset(request, stream, Unwatched())
    assert sorted(result.accepted) == ["good-a", "good-b"]
    (skipped,) = [event for event in events if event["kind"] == "skipped"]
    assert skipped["sessionId"] == "broken" and skipped["code"] == "session_internal"
    assert "ZeroDivisionError" in skipped["reason"] and "a bug in the reader" in skipped["detail"]
