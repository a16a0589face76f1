"""Ranks read disjoint shards of the sessions and end with the dataset one process builds
(issue 28): two ranks simulated by two threads exchanging through a barrier."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_cli
from rovertrain.contracts.command_schema import initial_schema
from rovertrain.data import dataset as dataset_module
from rovertrain.data.dataset import Dataset, DatasetRequest, Unwatched, build_dataset
from rovertrain.data.partition import processing_order
from rovertrain.data.reading import reading_shard
from rovertrain.data.recording import list_sessions
from rovertrain.job.config import parse_job
from rovertrain.protocol.events import EventStream


class ThreadExchange:
    """An all-gather between threads: what `RankGroup.gather` does between processes."""

    def __init__(self, size: int):
        self.size_of = size
        self.barrier = threading.Barrier(size)
        self.slots: list[Any] = [None] * size

    def member(self, rank: int) -> Member:
        return Member(self, rank)


@dataclasses.dataclass
class Member:
    exchange: ThreadExchange
    rank: int

    @property
    def size(self) -> int:
        return self.exchange.size_of

    def gather(self, value: Any) -> list[Any]:
        self.exchange.slots[self.rank] = value
        self.exchange.barrier.wait(timeout=60)
        gathered = list(self.exchange.slots)
        self.exchange.barrier.wait(timeout=60)  # nobody overwrites before all have read
        return gathered


def request_for(root: Path, sessions: list[str], **sampling: int) -> DatasetRequest:
    config = parse_job({"root": str(root), "config": {"threads": 1, **sampling}}).config
    return DatasetRequest(
        root, processing_order(sessions, 3), initial_schema(), 3, 1, config.decoding,
        config.sampling,
    )  # fmt: skip


def build(request: DatasetRequest) -> tuple[Dataset, list[dict[str, Any]]]:
    stream = EventStream(None)
    events: list[dict[str, Any]] = []
    stream.listeners.append(events.append)
    return build_dataset(request, stream, Unwatched()), events


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `dataset` and `skipped` events without their clock readings."""
    kept = []
    for event in events:
        if event["kind"] in ("dataset", "skipped"):
            fields = {k: v for k, v in event.items() if k not in ("time", "seq")}
            if "diagnostics" in fields:
                diagnostics = dict(fields["diagnostics"])
                diagnostics.pop("cacheLoadSeconds", None)
                fields["diagnostics"] = diagnostics
            kept.append(fields)
    return kept


@pytest.fixture(scope="module")
def stored_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shared") / "root"
    made = run_cli("synth", "--out", str(root), "--sessions", "9", "--minutes", "0.1",
                   "--seed", "11")  # fmt: skip
    assert made.code == 0, made.stderr
    assert run_cli("inspect", str(root)).code == 0  # the store's entries and manifest
    return root


@pytest.mark.parametrize("sampling", [{}, {"sessionsPerJob": 3, "heldOutSessions": 1}])
def test_two_ranks_read_disjoint_shards_and_build_the_one_process_dataset(
    stored_root: Path, monkeypatch: pytest.MonkeyPatch, sampling: dict[str, int]
) -> None:
    sessions = list_sessions(stored_root)
    alone, alone_events = build(request_for(stored_root, sessions, **sampling))
    loaded: dict[str, list[str]] = {}
    real = dataset_module.load_recording

    def spied(root: Path, session_id: str, *args: Any) -> Any:
        loaded.setdefault(threading.current_thread().name, []).append(session_id)
        return real(root, session_id, *args)

    monkeypatch.setattr(dataset_module, "load_recording", spied)
    exchange = ThreadExchange(2)
    built: dict[int, tuple[Dataset, list[dict[str, Any]]]] = {}

    def rank(number: int) -> None:
        request = request_for(stored_root, sessions, **sampling)
        member = exchange.member(number)
        built[number] = build(dataclasses.replace(request, exchange=member))

    threads = [threading.Thread(target=rank, args=(n,), name=f"rank{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert set(built) == {0, 1}
    read_by = [set(loaded.get(f"rank{n}", [])) for n in range(2)]
    assert read_by[0] and read_by[1] and not read_by[0] & read_by[1]  # disjoint shards
    assert read_by[0] | read_by[1] == set(alone.accepted) | set(alone.rejected)
    for dataset, events in built.values():
        assert dataset.schema == alone.schema and dataset.accepted == alone.accepted
        for part in ("training", "held_out", "selection"):
            mine, theirs = getattr(dataset, part), getattr(alone, part)
            for array in ("frames", "states", "fires", "values", "available", "session"):
                assert np.array_equal(getattr(mine, array), getattr(theirs, array)), part
        assert comparable(events) == comparable(alone_events)


def test_shards_balance_windows_and_cover_every_session() -> None:
    @dataclasses.dataclass
    class Row:
        windows: int

    read = [f"s{n}" for n in range(7)]
    known = {"s0": Row(1000), "s1": Row(10), "s2": Row(10), "s3": Row(500), "s4": Row(490)}
    shards = [reading_shard(read, known, rank, 2) for rank in range(2)]
    assert sorted(shards[0] + shards[1]) == read and not set(shards[0]) & set(shards[1])
    assert shards[0] == [s for s in read if s in shards[0]]  # the job's order kept
    weight = {s: known[s].windows if s in known else 402 for s in read}  # new: the average
    loads = [sum(weight[s] for s in shard) for shard in shards]
    assert abs(loads[0] - loads[1]) <= 500
