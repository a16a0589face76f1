"""The data layer's knobs (the job file's `config`): what decoding may cost, what is sampled."""

from __future__ import annotations

from dataclasses import dataclass

from rovertrain.contracts.settings import MAX_SECONDS, knob


@dataclass(frozen=True)
class Decoding:
    """Decoding: the limits a recording's video must fit, and the window store's size."""

    decodeTimeoutSeconds: float = knob(
        300,
        0,
        MAX_SECONDS,
        exclusive_minimum=True,
        doc="longest decode of one session's video before it is skipped (`decode_timeout`)",
    )
    cacheMaxMegabytes: int = knob(
        4096,
        0,
        10_000_000,
        integer=True,
        doc="the window store's budget: entries no session names go first, then the frames of "
        'the oldest ingested sessions (docs/performance.md, "The window store")',
    )
    maxVideoMegabytes: int = knob(4096, 1, 1_000_000, integer=True, doc="largest video file")
    maxVideoMinutes: float = knob(
        240, 0, 100_000, exclusive_minimum=True, doc="longest video a session may hold"
    )
    maxFramePixels: int = knob(
        3840 * 2160, 1, 1 << 30, integer=True, doc="largest frame (width × height) decoded"
    )


@dataclass(frozen=True)
class Sampling:
    """Sampling: how many windows are kept, and which part of each training session is held
    back to select the weights."""

    maxSamples: int = knob(12000, 1, 2_000_000, integer=True, doc="windows kept over sessions")
    sessionsPerJob: int = knob(
        64,
        1,
        100_000,
        integer=True,
        doc="training sessions a job reads: every new one, then older ones drawn from the "
        "store (seeded, stratified by rover and stops, weighted by length); a root with no "
        'more is read whole (docs/performance.md, "The window store")',
    )
    heldOutSessions: int = knob(
        16,
        1,
        100_000,
        integer=True,
        doc="held-out sessions the gate judges on: the same ones for a seed while the root "
        "grows, each with its share of maxSamples",
    )
    minimumSamples: int = knob(256, 1, 2_000_000, integer=True, doc="training windows needed")
    selectionFraction: float = knob(
        0.15,
        0,
        0.5,
        doc="the time-ordered tail of each training session kept out of training to select "
        "the weights to publish and to stop when they stop improving (0: train every pass, "
        "publish the last weights)",
    )
    takeOverRepeats: int = knob(
        3,
        1,
        10,
        integer=True,
        doc="supervised recordings: a person's training windows in the 2 s after a take-over "
        "are sampled this many times (1: like every other window; 3 reached issue 27's goal on "
        '5 of 5 data seeds, 1 on 4 of 5; docs/learning.md, "Learning from take-overs")',
    )
