"""A job after a leave-out (curation.json): it trains on fewer windows by exactly the stretch,
its held-out scores exclude it, the stored rows still describe the recording; `run` and
`validate-job` refuse an invalid curation file before decoding anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import EVENT_VALIDATOR, Result, run_cli, write_job
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.data import session_read
from rovertrain.data.curation import Curation, LeftOut, add_left_out, read_curation
from rovertrain.data.dataset import Dataset, DatasetRequest, Unwatched, build_dataset
from rovertrain.data.partition import is_held_out, processing_order
from rovertrain.data.recording import list_sessions, load_recording
from rovertrain.data.window_store import entries
from rovertrain.distributed.rank_place import RankPlace
from rovertrain.job.config import parse_job
from rovertrain.job.preflight import with_curation, with_sessions
from rovertrain.job.ranks import Ranks
from rovertrain.protocol.events import EventStream
from rovertrain.store.layout import Layout

Sampled = dict[str, list[int]]  # per session: the window indices sampled (training, tail, held out)


def build(
    root: Path, curation: Curation, monkeypatch: pytest.MonkeyPatch
) -> tuple[Dataset, dict[str, dict[str, Any]], Sampled]:
    """The job's data step on `root` with `curation`: the dataset, each session's `dataset`
    event, and the windows each session had sampled."""
    config = parse_job({"root": str(root), "config": {"threads": 1}}).config
    request = DatasetRequest(
        root=root,
        sessions=processing_order(list_sessions(root), 3),
        schema=initial_schema(),
        seed=3,
        threads=1,
        decoding=config.decoding,
        sampling=config.sampling,
        curation=curation,
    )
    sampled: Sampled = {}
    real = session_read._sample

    def spied(reading: Any, session_id: str, *args: Any) -> tuple[list[int], list[int]]:
        indices, tail = real(reading, session_id, *args)
        sampled[session_id] = [*indices, *tail]
        return indices, tail

    monkeypatch.setattr(session_read, "_sample", spied)
    stream = EventStream(None)
    events: list[dict[str, Any]] = []
    stream.listeners.append(events.append)
    dataset = build_dataset(request, stream, Unwatched())
    for event in events:
        errors = list(EVENT_VALIDATOR.iter_errors(json.loads(json.dumps(event))))
        assert not errors, f"{event} violates the schema: {errors[0].message}"
    by_session = {event["sessionId"]: event for event in events if event["kind"] == "dataset"}
    return dataset, by_session, sampled


def ticks_of(root: Path, session_id: str) -> np.ndarray:
    """The session's window ticks (ms on the command clock), from the window store."""
    stored = entries.load(entries.entry_for(root, load_recording(root, session_id)))
    assert stored is not None
    return stored.ticks


def test_a_left_out_stretch_leaves_training_and_the_held_out_scores(
    synth_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, seen_before, sampled_before = build(synth_copy, Curation(), monkeypatch)
    training = next(s for s in before.accepted if not is_held_out(s))
    held = next(s for s in before.accepted if is_held_out(s))
    stretches = {training: range(40, 70), held: range(10, 20)}  # window positions
    for session_id, inside in stretches.items():
        # Every window of the stretch was usable and sampled (the data set is small enough
        # for all of them): what disappears below is the stretch, nothing else.
        assert set(inside) <= set(sampled_before[session_id])
        ticks = ticks_of(synth_copy, session_id)
        # One bound between ticks, one on a tick (bounds are inclusive).
        start, end = float(ticks[inside[0]]) - 30.0, float(ticks[inside[-1]])
        add_left_out(synth_copy, session_id, start, end, f"bad stretch of {session_id}")

    after, seen_after, sampled_after = build(synth_copy, read_curation(synth_copy), monkeypatch)

    for session_id, inside in stretches.items():
        old, new = seen_before[session_id]["diagnostics"], seen_after[session_id]["diagnostics"]
        assert "leftOutWindows" not in old and "leftOutReasons" not in old
        assert new["leftOutWindows"] == len(inside)
        assert new["leftOutReasons"] == {f"bad stretch of {session_id}": len(inside)}
        assert old["usableWindows"] - new["usableWindows"] == len(inside)
        assert set(sampled_after[session_id]) == set(sampled_before[session_id]) - set(inside)
        assert seen_before[session_id]["sampled"] > seen_after[session_id]["sampled"]
    # The held-out session is scored on every usable window but the stretch's.
    assert seen_before[held]["sampled"] == seen_before[held]["diagnostics"]["usableWindows"]
    assert seen_after[held]["sampled"] == seen_before[held]["sampled"] - len(stretches[held])
    assert len(after.held_out) == len(before.held_out) - len(stretches[held])
    # Training counts the stretch out of its natural frequencies too.
    assert after.natural_command_windows()[0] < before.natural_command_windows()[0]
    # The sessions without a stretch are read as before.
    for session_id in set(before.accepted) - set(stretches):
        old, new = seen_before[session_id], seen_after[session_id]
        assert "leftOutWindows" not in new["diagnostics"]
        assert new["sampled"] == old["sampled"]
        assert new["diagnostics"]["usableWindows"] == old["diagnostics"]["usableWindows"]
        assert sampled_after[session_id] == sampled_before[session_id]
    # The rows the store keeps describe the recordings, whatever curation.json says.
    assert before.store is not None and after.store is not None
    rows_before = {row.session_id: row for row in before.store.ingested}
    rows_after = {row.session_id: row for row in after.store.ingested}
    assert set(stretches) <= set(rows_after)
    for session_id in stretches:
        assert rows_after[session_id] == rows_before[session_id]


def test_a_session_wholly_left_out_is_skipped_as_no_windows(
    synth_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = list_sessions(synth_copy)[0]
    everything = LeftOut("all", session_id, -1e9, 1e9, "all of it", "2026-12-06T10:00:00Z")
    dataset, seen, _ = build(synth_copy, Curation((everything,)), monkeypatch)
    assert session_id not in seen
    assert "curation.json leaves out every one" in dataset.rejected[session_id]
    assert dataset.store is not None
    (row,) = [row for row in dataset.store.ingested if row.session_id == session_id]
    assert row.usable_none + row.usable_command + row.usable_stop > 0  # the recording's


QUICK = {
    "passesPerJob": 1,
    "maxStepsPerJob": 2,
    "minimumSamples": 50,
    "maxSamples": 2000,
    "minimumDrivingMinutes": 0,
    "newDrivingMinutesPerModel": 0,
    "checkpointEverySteps": 0,
    "probeMaxSeconds": 0,
    "batchSize": 16,
}


def test_a_job_reads_curation_json_at_its_start(synth_copy: Path) -> None:
    """`run` itself: the stretch is left out, said so in the `dataset` event and the job's
    diagnostics."""
    session_id = next(s for s in list_sessions(synth_copy) if not is_held_out(s))
    add_left_out(synth_copy, session_id, 1000, 1900, "wheel slipped")  # ticks 1000 … 1900
    result = run_cli("run", "--job", str(write_job(synth_copy, **QUICK)))
    assert result.code == 0, result.stderr
    (event,) = [e for e in result.of("dataset") if e["sessionId"] == session_id]
    assert event["diagnostics"]["leftOutWindows"] == 10
    assert event["diagnostics"]["leftOutReasons"] == {"wheel slipped": 10}
    others = [e for e in result.of("dataset") if e["sessionId"] != session_id]
    assert others and not any("leftOutWindows" in e["diagnostics"] for e in others)
    assert result.last()["kind"] == "complete"
    assert result.last()["diagnostics"]["leftOutWindows"] == 10


def write_curation(root: Path, text: str) -> None:
    Layout(root).curation.write_text(text)


def test_run_refuses_an_invalid_curation_file_before_decoding(synth_copy: Path) -> None:
    entry = {"id": "no spaces", "sessionId": "s", "startMs": 0, "endMs": 1, "reason": "r"}
    bad = {"format": "rovertrain-curation/1", "leftOut": [{**entry, "at": "2026-12-06T10:00:00Z"}]}
    write_curation(synth_copy, json.dumps(bad))
    result: Result = run_cli("run", "--job", str(synth_copy / "job.json"))
    assert result.code == ExitCode.USAGE
    assert result.kinds() == ["error"]
    error = result.last()
    assert error["code"] == "invalid_curation" and "leftOut[0].id" in error["message"]
    assert not Layout(synth_copy).training.exists()  # nothing decoded, nothing locked


def test_validate_job_reports_the_curation_file(synth_copy: Path) -> None:
    job = str(synth_copy / "job.json")
    empty = run_cli("validate-job", job)
    assert empty.code == 0
    assert empty.last()["curation"] == {
        "entries": 0,
        "sessions": 0,
        "missingSessions": 0,
        "missingSessionIds": [],
    }
    first = list_sessions(synth_copy)[0]
    add_left_out(synth_copy, first, 0, 1000, "bumped")
    add_left_out(synth_copy, first, 5000, 6000, "bumped again")
    add_left_out(synth_copy, "deleted-session", 0, 1000, "gone since")
    reported = run_cli("validate-job", job)
    assert reported.code == 0
    assert reported.last()["curation"] == {
        "entries": 3,
        "sessions": 2,
        "missingSessions": 1,
        "missingSessionIds": ["deleted-session"],
    }
    write_curation(synth_copy, '{"format": "rovertrain-curation/1", "leftOut": []')
    refused = run_cli("validate-job", job)
    assert refused.code == ExitCode.USAGE
    assert refused.last()["code"] == "invalid_curation"
    assert "not valid JSON" in refused.last()["message"]


class LeaderGroup:
    """A rank's group whose rank 0 sent `leaders` (what `RankGroup.from_leader` returns)."""

    def __init__(self, leaders: Any):
        self.leaders = leaders
        self.sent: list[Any] = []

    def from_leader(self, value: Any) -> Any:
        self.sent.append(value)
        return self.leaders


def test_every_rank_takes_rank_0_s_curation(synth_copy: Path) -> None:
    job = parse_job({"root": str(synth_copy)})
    add_left_out(synth_copy, "mine", 0, 100, "read by this rank")
    mine = with_curation(with_sessions(job, synth_copy), synth_copy)
    leaders = Curation((LeftOut("lo-1", "theirs", 0, 5, "rank 0's", "2026-12-06T10:00:00Z"),))
    group = LeaderGroup(("job-0", ("theirs",), leaders))
    place = RankPlace(rank=1, size=2, local_rank=1)
    ranks = Ranks(place, group, "cpu")  # type: ignore[arg-type]
    agreed, job_id = ranks.agree_job(mine, "job-1")
    assert group.sent == [("job-1", mine.sessions, mine.curation)]
    assert (agreed.curation, agreed.sessions, job_id) == (leaders, ("theirs",), "job-0")
