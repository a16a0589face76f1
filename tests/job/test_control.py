"""JobControl alone: budget, pause accounting, stop reasons, phases and decoding activity."""

from __future__ import annotations

import threading
import time
from typing import Any

from rovertrain.job.control import JobControl, Phase
from rovertrain.protocol.events import EventStream


def control(max_seconds: float = 60.0, max_paused: float = 60.0) -> tuple[JobControl, list]:
    stream = EventStream(None, strict=True)
    seen: list[dict[str, Any]] = []
    stream.listeners.append(seen.append)
    return JobControl(stream, max_seconds, grace=5, max_paused=max_paused), seen


def test_the_first_stop_reason_wins_and_labels_the_stop() -> None:
    job, _ = control()
    assert not job.should_stop() and job.stop_label() is None
    job.request_stop("Stopped by SIGTERM")
    job.request_stop("Supervisor gone (stdout closed)")
    assert job.stop_requested() and job.should_stop()
    assert job.stop_label() == "Stopped by SIGTERM"


def test_the_budget_is_reached_without_a_stop_request() -> None:
    job, _ = control(max_seconds=0.01)
    time.sleep(0.02)
    assert job.budget_reached() and job.should_stop() and not job.stop_requested()
    assert job.stop_label() == "Job time budget reached"


def test_paused_time_does_not_count_against_the_budget() -> None:
    job, seen = control()
    job.pause_requested = True
    releaser = threading.Timer(0.3, lambda: setattr(job, "pause_requested", False))
    releaser.start()
    started = time.monotonic()
    job.safe_point()
    waited = time.monotonic() - started
    assert waited >= 0.25
    assert job.elapsed() < waited - 0.2
    kinds = [event["kind"] for event in seen]
    assert kinds == ["paused", "resumed"]
    assert seen[1]["pausedSeconds"] >= 0.25


def test_pausing_longer_than_allowed_becomes_a_stop() -> None:
    job, seen = control(max_paused=0.1)
    job.pause_requested = True
    job.safe_point()  # returns once the pause limit turned into a stop request
    assert job.stop_label() == "Paused longer than maxPausedSeconds"
    assert [event["kind"] for event in seen] == ["paused", "resumed"]


def test_phases_and_decoding_activity_reach_events_and_watchers() -> None:
    job, seen = control()
    watched: list[dict[str, int]] = []
    job.decoding_watchers.append(watched.append)
    job.enter(Phase.DECODE)
    job.show_decoding({"session-a": 12})
    assert seen[-1]["kind"] == "phase" and seen[-1]["phase"] == "decode"
    assert job.activity == "decoding session-a: 12 frames"
    assert job.details == {"decoding": {"session-a": 12}} and watched == [{"session-a": 12}]
    job.enter(Phase.TRAIN)
    assert job.activity == "" and job.details == {}
