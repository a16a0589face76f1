"""What carries over from one job to the next through the resume file, and its one mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, NotRequired, TypedDict

from rovertrain.contracts.command_schema import Schema, initial_schema
from rovertrain.contracts.json_types import JsonObject

if TYPE_CHECKING:
    import torch


class SavedState(TypedDict):
    """The resume file's content (camelCase keys, as the seed's); `job.resume` adds the
    policy version and checks the required keys on loading."""

    weights: dict[str, torch.Tensor]
    optimizer: dict[str, object]
    schema: Schema
    steps: int
    examples: int
    lastPublished: int
    trainedRovers: NotRequired[list[str]]
    controlProfiles: NotRequired[list[str]]
    distinctWindows: NotRequired[dict[str, int]]
    publishedWindows: int
    lastProbeSteps: NotRequired[int]
    learningProbe: NotRequired[JsonObject | None]


@dataclass
class TrainingState:
    schema: Schema
    steps: int = 0
    examples: int = 0
    last_published: int = 0
    trained_rovers: set[str] = field(default_factory=set)
    control_profiles: list[str] = field(default_factory=list)
    distinct_windows: dict[str, int] = field(default_factory=dict)
    published_windows: int = 0
    last_probe_steps: int = 0
    learning_probe: JsonObject | None = None
    weights: dict[str, torch.Tensor] | None = None  # torch state dicts, as loaded
    optimizer: dict[str, object] | None = None

    @staticmethod
    def fresh() -> TrainingState:
        return TrainingState(schema=initial_schema())

    @staticmethod
    def from_saved(saved: SavedState | None) -> TrainingState:
        """The resume file's content (camelCase keys, as the seed's) as a state."""
        if saved is None:
            return TrainingState.fresh()
        return TrainingState(
            schema=saved["schema"],
            steps=saved["steps"],
            examples=saved["examples"],
            last_published=saved["lastPublished"],
            trained_rovers=set(saved.get("trainedRovers", [])),
            control_profiles=list(saved.get("controlProfiles", [])),
            distinct_windows=dict(saved.get("distinctWindows", {})),
            published_windows=saved["publishedWindows"],
            last_probe_steps=saved.get("lastProbeSteps", 0),
            learning_probe=saved.get("learningProbe"),
            weights=saved["weights"],
            optimizer=saved["optimizer"],
        )

    def to_saved(self) -> SavedState:
        """The resume file's content; weights and optimizer must be set."""
        assert self.weights is not None and self.optimizer is not None
        return {
            "weights": self.weights,
            "optimizer": self.optimizer,
            "schema": self.schema,
            "steps": self.steps,
            "examples": self.examples,
            "lastPublished": self.last_published,
            "trainedRovers": sorted(self.trained_rovers),
            "controlProfiles": self.control_profiles,
            "distinctWindows": self.distinct_windows,
            "publishedWindows": self.published_windows,
            "lastProbeSteps": self.last_probe_steps,
            "learningProbe": self.learning_probe,
        }

    def distinct_window_count(self) -> int:
        return sum(self.distinct_windows.values())

    def absorb(self, schema: Schema, rovers: set[str], profiles: list[str]) -> None:
        """What this job's data added: the grown schema, rovers and control profiles."""
        self.schema = schema
        self.trained_rovers |= rovers
        for profile in profiles:
            if profile not in self.control_profiles:
                self.control_profiles.append(profile)


class StartingWeights(StrEnum):
    """Where a job's training starts (`diagnostics.startingWeights`)."""

    INITIAL = "initial"  # no resume state: weights drawn from the job's seed
    RESUMED = "resumed"  # the resume state's: the same footage, training goes on
    INITIAL_FOR_NEW_FOOTAGE = "initial: new footage"  # the pool has footage they never saw


def new_footage(seen: Mapping[str, int], training: Mapping[str, int]) -> list[str]:
    """The training sessions with windows the earlier jobs never read (`seen`: windows per
    session, the resume state's `distinctWindows`; `training`: this job's). Pure.

    Counted in windows, not by session id: a recording that grew since (a rover's recorder
    still appending) holds footage the saved weights never saw."""
    return sorted(
        session for session, windows in training.items() if windows > seen.get(session, 0)
    )


def starting_weights(resumable: bool, footage: list[str]) -> StartingWeights:
    """A job resumes the saved weights only to go on training on the footage they were trained
    on (a job the budget or a stop request cut short). With new footage it starts from the
    initial weights: resumed weights that had converged on the earlier footage kept the
    selection signal's best at their first measurement and never learnt the take-overs a fresh
    start learnt from the same pool (docs/learning.md, "A new model for new footage"); warm
    starts generalising worse than fresh ones is known beyond this project (Ash and Adams,
    2020). The pool is bounded by `maxSamples`, so a fresh start costs the same however large
    the fleet's footage grows."""
    if not resumable:
        return StartingWeights.INITIAL
    return StartingWeights.INITIAL_FOR_NEW_FOOTAGE if footage else StartingWeights.RESUMED
