"""The `complete` event's `diagnostics`: what a person needs to understand one job."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from rovertrain.contracts.json_types import JsonObject, JsonValue
from rovertrain.data.dataset import Dataset
from rovertrain.job.state import StartingWeights
from rovertrain.learn.train import TrainResult


@dataclass
class JobDiagnostics:
    """Filled step by step; `to_json` writes only what the job got as far as measuring."""

    cpu_started: float = field(default_factory=time.process_time)
    figures: JsonObject = field(default_factory=dict)

    def dataset(self, dataset: Dataset) -> None:
        self.figures.update(
            dataset=list(dataset.rows()),
            decodeSeconds=dataset.decode_seconds,
            poolBytes=dataset.training.nbytes() + dataset.held_out.nbytes(),
        )
        curated = [result.left_out for result in dataset.sessions if result.left_out is not None]
        if curated:  # the sessions read that curation.json names: their windows left out
            self.figures["leftOutWindows"] = sum(figures.windows for figures in curated)

    def selection(self, summary: JsonObject) -> None:
        self.figures["selection"] = summary

    def starting_weights(self, start: StartingWeights, new_sessions: int) -> None:
        """Where training started, and the training sessions with footage new to the job."""
        self.figures["startingWeights"] = str(start)
        self.figures["newFootageSessions"] = new_sessions

    def optimizer(self, settings: dict[str, float]) -> None:
        self.figures["optimizer"] = dict(settings)

    def seconds(self, name: str, seconds: float) -> None:
        self.figures[name] = round(seconds, 3)

    def training(self, result: TrainResult) -> None:
        self.figures.update(trainingSeconds=result.seconds, trainingStoppedBy=result.stopped_by)

    def evaluation(self, audit: JsonObject, probe_seconds: float, seconds: float) -> None:
        """The evaluate step: the training audit and its time, the probe's apart."""
        self.figures["trainingAudit"] = audit
        self.seconds("probeSeconds", probe_seconds)
        self.seconds("evaluationSeconds", seconds - probe_seconds)

    def finish(self, policy: JsonValue) -> None:
        """`policy`: the published model's specification (model.json's)."""
        self.figures.update(
            cpuSeconds=round(time.process_time() - self.cpu_started, 3),
            peakRssMiB=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            dependencies={"torch": str(torch.__version__), "numpy": str(np.__version__)},
            policy=policy,
        )

    def to_json(self) -> JsonObject:
        return dict(self.figures)
