"""The learn layer's knobs (the job file's `config`): optimisation, augmentation, loss weights,
weight selection and the measurements taken while and after training."""

from __future__ import annotations

from dataclasses import dataclass

from rovertrain.contracts.settings import knob


@dataclass(frozen=True)
class Optimisation:
    """Optimisation: AdamW, the batch, how long to train, and the arithmetic."""

    batchSize: int = knob(64, 1, 4096, integer=True, doc="examples per step")
    passesPerJob: int = knob(
        50, 1, 10_000, integer=True, doc="passes over the pool per job, at most (see patience)"
    )
    maxStepsPerJob: int = knob(100_000, 1, 100_000_000, integer=True, doc="steps per job")
    learningRate: float = knob(0.001, 0, 10, exclusive_minimum=True, doc="AdamW learning rate")
    weightDecay: float = knob(0.01, 0, 1, doc="AdamW weight decay")
    precision: str = knob(
        "auto",
        choices=("auto", "bf16", "fp32"),
        doc="training arithmetic: bf16 (autocast), fp32, or auto (bf16 where the CPU computes "
        "it natively, AVX-512 or AMX; fp32 elsewhere, where bf16 is emulated and slower)",
    )


@dataclass(frozen=True)
class Augmentation:
    """Augmentation: what training changes in its examples (never in evaluation)."""

    augment: bool = knob(
        True,
        doc="train-only augmentation: brightness/contrast, and augmentColour, augmentShiftPixels",
    )
    augmentColour: float = knob(
        0.3,
        0,
        1,
        doc="with augment: the spread of a random gain per colour channel (0.2: each of red, "
        "green and blue scaled by 0.9-1.1), as white balance and room light vary",
    )
    augmentShiftPixels: int = knob(
        4,
        0,
        16,
        integer=True,
        doc="with augment: a random vertical translation of the model's picture by up to this "
        "many pixels each way, edges repeated, as a camera's pitch varies (never sideways: "
        "that would look like a change of heading)",
    )
    valueHistoryDropout: float = knob(
        0.0,
        0,
        1,
        doc="train-only: the fraction of examples whose state vector hides the last command's "
        "values, so values are predicted from the camera, not copied (docs/learning.md)",
    )
    hideNeverSent: float = knob(
        1.0,
        0,
        1,
        doc="train-only: for a command type silent for 10 s or more, the probability that the "
        "state vector's neverSent flag is redrawn at random, so the policy cannot read the "
        "start of a session from the types not sent yet (docs/learning.md)",
    )


@dataclass(frozen=True)
class LossWeights:
    """Loss: how much each kind of example counts."""

    resendValueWeight: float = knob(
        0.0,
        0,
        1,
        doc="weight of a re-send (same values as the last command of its type) in the value "
        "loss, against 1 for a change: below 1 the value head learns what to send from the "
        "camera instead of copying the last command (docs/learning.md); a value sent at a few "
        "levels counts every send (a held key's repeat keeps the level)",
    )
    typeChangeEventWeight: float = knob(
        4.0,
        1,
        100,
        doc="weight in the event loss of a window whose command switches between the stop and "
        "movement roles (a restart after a stop, a stop while driving; other-role commands "
        "such as a horn do not count), against 1 for every other window",
    )


@dataclass(frozen=True)
class Selection:
    """Selection: which weights are published, and when training has converged."""

    selectEverySteps: int = knob(
        200, 1, 100_000_000, integer=True, doc="training steps between selection evaluations"
    )
    weightAverageDecay: float = knob(
        0.995,
        0,
        0.9999,
        doc="the published weights are an exponential moving average of the trained ones "
        "with this decay per step (selected by the same signal); 0: the trained weights",
    )
    patience: int = knob(
        5,
        0,
        1_000_000,
        integer=True,
        doc="selection evaluations without improvement before training stops as converged, "
        "and no fewer than led to the best (0: never)",
    )


@dataclass(frozen=True)
class Monitoring:
    """Monitoring: held-out measurements while training, and the learning probe after it."""

    evalEverySteps: int = knob(0, 0, 100_000_000, integer=True, doc="periodic held-out eval")
    probeMaxSeconds: float = knob(
        20, 0, 3600, doc="longest learning probe after training (0: no probe)"
    )
