"""What one 100 ms window shows the policy: frame size and the state-vector layout.

Shared by the decoder (frame size), the labeller (state layout) and the policy (input shape),
so they cannot disagree. Bump `INPUT_VERSION` when any of it changes: it keys the window store's entries.
"""

from __future__ import annotations

OBS_WIDTH = 96
OBS_HEIGHT = 72
OBS_CHANNELS = 3
TICK_MS = 100
FRAME_HISTORY = 2
"""Frames the policy sees per window: this tick's and the previous tick's (TICK_MS earlier),
stacked along the channels (this one first). One picture cannot show how fast the rover goes,
and the throttle a driver chooses depends on it (docs/learning.md, "Speed from the camera")."""
MODEL_CHANNELS = OBS_CHANNELS * FRAME_HISTORY
STALE_FRAME_MS = 250
"""A window whose newest frame is older than this is unusable."""

STATE_SHORT_MS = 1000
STATE_LONG_MS = 10000
STATE_BINS = 10
STATE_BIN_MS = TICK_MS
"""The width of one elapsed-time bin: one tick, so the bins count the ticks since a command."""
STATE_FEATURES_PER_SLOT = 4 + 3 + STATE_BINS
"""lastValue×VALUES, neverSent, short and long elapsed ramps, 100 ms elapsed bins."""

BLIND_GREY = 128
"""The constant picture of a blind baseline: every pixel of every channel at this level."""

SUPERSEDED_WITHOUT_BINS = (
    "a stop- or movement-role type sent before the last command of another such type shows "
    "no msSinceLast bin and min(msSinceLast,1000)/1000 as 1"
)
"""The policy specification's `input.state.superseded` since policy version 4
(`runtime.state.superseded_motion`); a model without it was trained on the elapsed times as
they were."""

INPUT_VERSION = 2
"""2: frames resized by `runtime.frames.prepare_frame` (area average), shared with the rover."""
