"""Every path under a data root, named once.

    <root>/
      recordings/<sessionId>/            one recorded drive (read only; `recording_dir`)
      curation.json                      stretches left out of training, the person's
                                         (data/curation.py; `curation`)
      .curation.lock                     its writers' lock, flock'd, never deleted
                                         (`curation_lock`)
      training/                          everything rovertrain writes (`training`)
        .lock                            the job lock, flock'd, never deleted (`lock`)
        current.json                     reserved for the current model (`current`)
        resume-v<N>.pt                   resume state of policy version N (`resume(N)`)
        cache/                           the window store (`window_store`; the folder's name
                                         predates the store's, kept for existing roots)
          <name>.frames                  decoded frames of one entry (`entry_frames(name)`)
          <name>.json                    its metadata, written last (`entry_meta(name)`)
          manifest.parquet               one row per ingested session (data/window_store/manifest.py)
        checkpoints/                     published models (`checkpoints`)
          <id>/                          one immutable checkpoint (`checkpoint(id)`)
            weights.safetensors          its weights (`WEIGHTS_FILE`)
            model.json                   its metadata and file digests (`METADATA_FILE`)
          .<id>.pending/                 its staging folder while written (`staging(id)`)
        jobs/<jobId>/                    one job's files (`job(jobId)`, a `JobDir`)
          events.ndjson                  the replay log of its events (`events`)
          events.<n>.ndjson              logs of earlier runs under the same id (`previous_events(n)`)
          training_log.csv               one row per progress event (`training_log`)
          checkpoint_evals.csv           one row per held-out evaluation (`checkpoint_evals`)
          report.png                     the dashboard of `rovertrain report` (`report`)
        review/replays/<model>/<sessionId>.ndjson
                                         a model's replay of a session, kept for the review
                                         page (`review_replay(model, session)`)

Only names live here: nothing in this module touches the disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STAGING_SUFFIX = ".pending"
WEIGHTS_FILE = "weights.safetensors"
METADATA_FILE = "model.json"


@dataclass(frozen=True)
class JobDir:
    """The files of one job, `training/jobs/<jobId>/` (or any folder given on the command line)."""

    path: Path

    @property
    def events(self) -> Path:
        return self.path / "events.ndjson"

    def previous_events(self, number: int) -> Path:
        """The log of an earlier run under the same job id, numbered from 1."""
        return self.path / f"events.{number}.ndjson"

    @property
    def training_log(self) -> Path:
        return self.path / "training_log.csv"

    @property
    def checkpoint_evals(self) -> Path:
        return self.path / "checkpoint_evals.csv"

    @property
    def report(self) -> Path:
        return self.path / "report.png"

    @property
    def lock(self) -> Path:
        """The job lock of the data root this job folder lies in (`training/.lock`)."""
        return self.path.parent.parent / ".lock"


@dataclass(frozen=True)
class Layout:
    """The paths of one data root; see the module docstring for the tree."""

    root: Path

    @property
    def recordings(self) -> Path:
        return self.root / "recordings"

    def recording_dir(self, session_id: str) -> Path:
        return self.recordings / session_id

    @property
    def curation(self) -> Path:
        """The stretches of sessions left out of training (docs/recording-format.md)."""
        return self.root / "curation.json"

    @property
    def curation_lock(self) -> Path:
        return self.root / ".curation.lock"

    @property
    def training(self) -> Path:
        return self.root / "training"

    def review_replay(self, model_id: str, session_id: str) -> Path:
        return self.training / "review" / "replays" / model_id / f"{session_id}.ndjson"

    @property
    def lock(self) -> Path:
        return self.training / ".lock"

    @property
    def current(self) -> Path:
        return self.training / "current.json"

    def resume(self, version: int) -> Path:
        return self.training / f"resume-v{version}.pt"

    @property
    def window_store(self) -> Path:
        return self.training / "cache"

    def entry_frames(self, name: str) -> Path:
        return self.window_store / f"{name}.frames"

    def entry_meta(self, name: str) -> Path:
        return self.window_store / f"{name}.json"

    @property
    def checkpoints(self) -> Path:
        return self.training / "checkpoints"

    def checkpoint(self, model_id: str) -> Path:
        return self.checkpoints / model_id

    def staging(self, model_id: str) -> Path:
        return self.checkpoints / f".{model_id}{STAGING_SUFFIX}"

    @property
    def jobs(self) -> Path:
        return self.training / "jobs"

    def job(self, job_id: str) -> JobDir:
        return JobDir(self.jobs / job_id)


def is_staging(name: str) -> bool:
    """Whether a name in `checkpoints/` is a staging folder (`.<id>.pending`)."""
    return name.startswith(".") and name.endswith(STAGING_SUFFIX)
