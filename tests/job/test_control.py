"""JobControl alone: budget, pause accounting, stop reasons, phases, decoding activity,
heartbeats and the watchdog's deadlines, on a clock the test advances by hand."""

from __future__ import annotations

from typing import Any

import pytest

from fake_clock import FakeClock
from rovertrain.contracts.errors import ErrorCode
from rovertrain.job.control import JobControl, Phase
from rovertrain.protocol.events import EventStream


def control(
    clock: FakeClock,
    max_seconds: float = 60.0,
    max_paused: float = 60.0,
    grace: float = 5.0,
    heartbeat_seconds: float = 15.0,
) -> tuple[JobControl, list[dict[str, Any]]]:
    stream = EventStream(None, strict=True, clock=clock)
    seen: list[dict[str, Any]] = []
    stream.listeners.append(seen.append)
    job = JobControl(stream, max_seconds, grace, max_paused, heartbeat_seconds)
    return job, seen


def kinds(seen: list[dict[str, Any]]) -> list[str]:
    return [event["kind"] for event in seen]


def test_the_job_runs_on_its_streams_clock() -> None:
    clock = FakeClock(start=5000.0)
    job, _ = control(clock)
    assert job.clock is clock and job.started == 5000.0 and job.stream.last_emit == 5000.0
    clock.advance(3)
    job.enter(Phase.DECODE)
    assert job.stream.last_emit == 5003.0 and job.elapsed() == 3.0


def test_the_first_stop_reason_wins_and_labels_the_stop() -> None:
    job, _ = control(FakeClock())
    assert not job.should_stop() and job.stop_label() is None
    job.request_stop("Stopped by SIGTERM")
    job.request_stop("Supervisor gone (stdout closed)")
    assert job.stop_requested() and job.should_stop()
    assert job.stop_label() == "Stopped by SIGTERM"


def test_the_budget_is_reached_without_a_stop_request() -> None:
    clock = FakeClock()
    job, _ = control(clock, max_seconds=10)
    clock.advance(9.5)
    assert job.elapsed() == 9.5 and job.remaining() == 0.5
    assert not job.budget_reached() and not job.should_stop() and job.stop_label() is None
    clock.advance(0.5)
    assert job.budget_reached() and job.should_stop() and not job.stop_requested()
    assert job.stop_label() == "Job time budget reached"


def test_paused_time_does_not_count_against_the_budget() -> None:
    clock = FakeClock()
    job, seen = control(clock, max_seconds=10)
    clock.advance(2)
    job.pause_requested = True
    # SIGCONT 30 s into the pause: the safe point waits (on the clock) until then.
    clock.after(30, lambda: setattr(job, "pause_requested", False))
    job.safe_point()
    assert kinds(seen) == ["paused", "resumed"]
    paused, resumed = seen
    assert clock.now >= 1000 + 2 + 30 and sum(clock.slept) >= 30
    assert resumed["pausedSeconds"] == pytest.approx(30, abs=0.1)
    # The budget clock stood still while paused, and 30 s of pause did not exhaust 10 s.
    assert paused["elapsedSeconds"] == resumed["elapsedSeconds"] == pytest.approx(2)
    assert job.elapsed() == pytest.approx(2) and not job.budget_reached()
    assert job.paused_total == pytest.approx(30, abs=0.1)
    clock.advance(7.5)
    assert not job.budget_reached()
    clock.advance(0.6)
    assert job.budget_reached() and job.stop_label() == "Job time budget reached"


def test_pausing_longer_than_allowed_becomes_a_stop() -> None:
    clock = FakeClock()
    job, seen = control(clock, max_paused=2)
    job.pause_requested = True
    still_paused: list[bool] = []
    clock.after(1.9, lambda: still_paused.append(job.is_paused()))
    job.safe_point()  # returns once the pause limit turned into a stop request
    assert still_paused == [True]  # not stopped before the limit
    assert job.stop_label() == "Paused longer than maxPausedSeconds"
    assert kinds(seen) == ["paused", "resumed"]
    assert 2 < seen[1]["pausedSeconds"] <= 2 + 0.1  # at its first check past the limit
    assert job.pause_requested and not job.is_paused()  # a stop overrides the pause


def test_phases_and_decoding_activity_reach_events_and_watchers() -> None:
    job, seen = control(FakeClock())
    watched: list[dict[str, int]] = []
    job.decoding_watchers.append(watched.append)
    job.enter(Phase.DECODE)
    job.show_decoding({"session-a": 12})
    assert seen[-1]["kind"] == "phase" and seen[-1]["phase"] == "decode"
    assert job.activity == "decoding session-a: 12 frames"
    assert job.details == {"decoding": {"session-a": 12}} and watched == [{"session-a": 12}]
    job.enter(Phase.TRAIN)
    assert job.activity == "" and job.details == {}


def test_a_heartbeat_comes_after_heartbeat_seconds_without_events() -> None:
    clock = FakeClock()
    job, seen = control(clock, heartbeat_seconds=15)
    job.enter(Phase.DECODE)
    job.show_decoding({"session-a": 3})
    clock.advance(14.5)
    assert not job.heartbeat()
    clock.advance(0.5)
    assert job.heartbeat()
    beat = seen[-1]
    assert kinds(seen) == ["phase", "heartbeat"]
    assert beat["phase"] == "decode" and beat["paused"] is False
    assert beat["elapsedSeconds"] == 15.0 and beat["decoding"] == {"session-a": 3}
    assert beat["activity"] == "decoding session-a: 3 frames"
    # The heartbeat is an event too: the next one is due 15 s after it.
    clock.advance(10)
    job.enter(Phase.TRAIN)  # any event restarts the count
    clock.advance(14)
    assert not job.heartbeat()
    clock.advance(1)
    assert job.heartbeat() and kinds(seen) == ["phase", "heartbeat", "phase", "heartbeat"]


def test_heartbeats_while_paused_say_so_and_the_budget_clock_stands_still() -> None:
    clock = FakeClock()
    job, seen = control(clock, heartbeat_seconds=1)
    clock.advance(4)
    job.pause_began()
    for _ in range(3):
        clock.advance(1)
        assert job.heartbeat()
    beats = [event for event in seen if event["kind"] == "heartbeat"]
    assert len(beats) == 3 and all(beat["paused"] for beat in beats)
    assert {beat["elapsedSeconds"] for beat in beats} == {4.0} == {seen[0]["elapsedSeconds"]}
    job.pause_ended()
    assert seen[-1]["kind"] == "resumed" and seen[-1]["pausedSeconds"] == 3.0
    clock.advance(1)
    assert job.heartbeat() and seen[-1]["paused"] is False and seen[-1]["elapsedSeconds"] == 5.0


def test_no_heartbeat_after_the_terminal_event() -> None:
    clock = FakeClock()
    job, seen = control(clock, heartbeat_seconds=1)
    job.stream.emit("error", code="internal", message="ended")
    clock.advance(10)
    assert not job.heartbeat() and kinds(seen) == ["error"]


def test_an_unhonoured_stop_request_is_overdue_after_the_grace() -> None:
    clock = FakeClock()
    job, _ = control(clock, max_seconds=1000, grace=5)
    clock.advance(100)
    assert job.overdue() is None  # nothing asked: no grace runs
    job.request_stop("Stopped by SIGTERM")
    clock.advance(5)
    assert job.overdue() is None
    clock.advance(0.5)
    overdue = job.overdue()
    assert overdue is not None and overdue[0] == ErrorCode.STOP_TIMEOUT
    assert "within 5 s of the request" in overdue[1]


def test_the_hard_deadline_is_the_budget_plus_the_grace_and_skips_paused_time() -> None:
    clock = FakeClock()
    job, _ = control(clock, max_seconds=10, grace=5, max_paused=1000)
    clock.advance(8)
    job.pause_began()
    clock.advance(500)  # paused: the budget clock stands still
    assert job.overdue() is None and not job.budget_reached()
    job.pause_ended()
    clock.advance(7)
    assert job.overdue() is None and job.budget_reached()
    clock.advance(0.5)
    overdue = job.overdue()
    assert overdue is not None and overdue[0] == ErrorCode.DEADLINE_EXCEEDED
    assert "maxJobSeconds plus the 5 s grace" in overdue[1]


def test_a_pause_past_its_limit_becomes_a_stop_that_the_grace_then_ends() -> None:
    clock = FakeClock()
    job, _ = control(clock, max_paused=60, grace=5)
    job.pause_requested = True
    job.pause_began()
    clock.advance(60)
    assert job.is_paused() and job.overdue() is None
    clock.advance(1)
    assert not job.is_paused()  # the watchdog's check turns it into a stop request
    assert job.stop_label() == "Paused longer than maxPausedSeconds"
    clock.advance(5.5)
    overdue = job.overdue()
    assert overdue is not None and overdue[0] == ErrorCode.STOP_TIMEOUT
