"""Which sessions a job reads: every new one, and a bounded, seeded, stratified sample of the
older ones. Pure: ids and manifest figures in, ids out.

A job's cost must grow with new footage and `maxSamples`, not with everything ever recorded.
So a job reads (labels from the command log, windows from the store) only:
- every new session (it must be ingested: decoded once, counted into the manifest);
- up to `sessionsPerJob` training sessions in all: the new ones, then older ones drawn by
  `choose_older` (at least half of `sessionsPerJob` older ones, so a burst of new footage never
  crowds out the past completely);
- up to `heldOutSessions` held-out sessions, always the same ones for a seed while the root
  grows (`choose_held_out`), so successive jobs are judged on a steady sample.
A root within both limits is read whole, exactly as before the store had a manifest.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Older:
    """An ingested session that may be read: what stratifying and weighting it needs."""

    session_id: str
    rover_id: str
    usable: int  # usable windows
    stops: bool  # any usable window holds a stop


@dataclass(frozen=True)
class ReadingPlan:
    sampled: frozenset[str]  # sessions whose windows enter this job's sample
    ingested: frozenset[str]  # new sessions: labelled and counted into the manifest

    @property
    def read(self) -> frozenset[str]:
        return self.sampled | self.ingested


def plan_reading(
    training_new: Sequence[str],
    training_older: Sequence[Older],
    held_out_new: Sequence[str],
    held_out_older: Sequence[str],
    limits: tuple[int, int],
    seed: int,
    generation: int,
) -> ReadingPlan:
    """What to read; `limits` is (sessionsPerJob, heldOutSessions)."""
    sessions_per_job, held_out_sessions = limits
    training = list(training_new)
    if len(training_new) + len(training_older) <= sessions_per_job:
        training += [older.session_id for older in training_older]
    else:
        count = max(sessions_per_job - len(training_new), sessions_per_job // 2)
        training += choose_older(training_older, count, _generation_rng(seed, generation))
    held_out = [*held_out_new, *held_out_older]
    if len(held_out) > held_out_sessions:
        held_out = choose_held_out(held_out, held_out_sessions, seed)
    return ReadingPlan(
        sampled=frozenset([*training, *held_out]),
        ingested=frozenset([*training_new, *held_out_new]),
    )


def choose_older(candidates: Sequence[Older], count: int, rng: random.Random) -> list[str]:
    """`count` sessions, stratified by rover and by whether they hold stops, each stratum's
    share proportional to its usable windows (largest remainder); within a stratum, a weighted
    sample without replacement, the weight a session's usable windows (Efraimidis-Spirakis):
    an hour-long drive is likelier to be read than a minute-long one, and every rover and
    every kind of drive keeps its share of the past."""
    if count >= len(candidates):
        return [candidate.session_id for candidate in candidates]
    strata: dict[tuple[str, bool], list[Older]] = {}
    for candidate in candidates:
        strata.setdefault((candidate.rover_id, candidate.stops), []).append(candidate)
    shares = _largest_remainder(
        {key: sum(max(1, c.usable) for c in members) for key, members in strata.items()},
        {key: len(members) for key, members in strata.items()},
        count,
    )
    chosen: list[str] = []
    for key in sorted(strata):
        members = strata[key]
        keyed = sorted(
            members,
            key=lambda c: math.log(1.0 - rng.random()) / max(1, c.usable),
            reverse=True,
        )
        chosen += [member.session_id for member in keyed[: shares[key]]]
    return chosen


def _largest_remainder(
    weights: Mapping[tuple[str, bool], int], sizes: Mapping[tuple[str, bool], int], count: int
) -> dict[tuple[str, bool], int]:
    """`count` seats over the strata: one each first (when there are enough), the rest in
    proportion to `weights` by largest remainder, none above its size."""
    seats = dict.fromkeys(weights, 1 if count >= len(weights) else 0)
    left = count - sum(seats.values())
    while left > 0:
        open_strata = [key for key in sorted(weights) if seats[key] < sizes[key]]
        if not open_strata:
            break
        total = sum(weights[key] for key in open_strata)
        quotas = {key: left * weights[key] / total for key in open_strata}
        for key in open_strata:
            whole = min(int(quotas[key]), sizes[key] - seats[key])
            seats[key] += whole
            left -= whole
        by_remainder = sorted(open_strata, key=lambda key: quotas[key] % 1, reverse=True)
        for key in by_remainder:
            if left and seats[key] < sizes[key]:
                seats[key] += 1
                left -= 1
    return seats


def choose_held_out(sessions: Collection[str], count: int, seed: int) -> list[str]:
    """The `count` held-out sessions with the smallest seeded hash: a new session joins the
    sample only by displacing one, so the held-out set drifts slowly as the root grows."""
    ranked = sorted(sessions, key=lambda session: _hash(f"{seed}:heldOut:{session}"))
    return ranked[:count]


def _generation_rng(seed: int, generation: int) -> random.Random:
    """Successive jobs read different older sessions; the same job on the same store, the
    same ones."""
    return random.Random(_hash(f"{seed}:older:{generation}"))


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class HasWindows(Protocol):
    @property
    def windows(self) -> int: ...


def reading_shard(
    read: Sequence[str], known: Mapping[str, HasWindows], rank: int, ranks: int
) -> list[str]:
    """Rank `rank`'s sessions of `read` (in the given order): balanced by windows, the largest
    first, each to the rank with the fewest windows so far (a new session, not yet counted,
    weighs as much as the average stored one). Deterministic and complete: every session is
    read by exactly one rank."""
    counted = [known[session].windows for session in read if session in known]
    typical = max(1, sum(counted) // len(counted)) if counted else 1
    weight = {s: (known[s].windows if s in known else typical) for s in read}
    position = {session: index for index, session in enumerate(read)}
    loads = [0] * ranks
    owner: dict[str, int] = {}
    for session in sorted(read, key=lambda s: (-weight[s], position[s])):
        chosen = min(range(ranks), key=lambda r: (loads[r], r))
        owner[session] = chosen
        loads[chosen] += weight[session]
    return [session for session in read if owner[session] == rank]
