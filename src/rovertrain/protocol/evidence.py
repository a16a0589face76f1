"""Live evidence files of a job: `training_log.csv` and `checkpoint_evals.csv`.

Both are append-only; when a later row brings a new column, the header is rewritten safely
(a temp file and a rename, old rows padded), so no row is ever lost.
"""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Mapping
from pathlib import Path

from rovertrain.protocol.events import Event
from rovertrain.store.durable import replacing
from rovertrain.store.layout import JobDir


class GrowingCsv:
    def __init__(self, path: Path, base_fields: tuple[str, ...]):
        self.path = path
        self.fields = list(base_fields)
        self._lock = threading.Lock()
        if path.exists():
            with open(path, newline="") as stream:
                header = next(csv.reader(stream), None)
            if header:
                self.fields = header + [f for f in base_fields if f not in header]

    def append(self, row: Mapping[str, object]) -> None:
        with self._lock:
            new = [key for key in row if key not in self.fields]
            if new or not self.path.exists():
                self.fields.extend(new)
                self._rewrite_header()
            with open(self.path, "a", newline="") as stream:
                csv.DictWriter(stream, fieldnames=self.fields).writerow(
                    {key: row.get(key, "") for key in self.fields}
                )

    def _rewrite_header(self) -> None:
        rows: list[dict[str, str]] = []
        if self.path.exists():
            with open(self.path, newline="") as stream:
                rows = list(csv.DictReader(stream))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=self.fields)
        writer.writeheader()
        for old in rows:
            writer.writerow({key: old.get(key, "") for key in self.fields})
        with replacing(self.path) as temporary:
            temporary.write_text(buffer.getvalue())


def flatten(prefix: str, value: object, out: dict[str, object]) -> None:
    """The numbers inside `value` into `out`, keyed by their dotted path."""
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(f"{prefix}.{key}" if prefix else key, item, out)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out[prefix] = value


class EvidenceWriter:
    """An event listener that turns progress and evaluation events into CSV rows."""

    def __init__(self, job_dir: Path):
        job_dir.mkdir(parents=True, exist_ok=True)
        files = JobDir(job_dir)
        self.training = GrowingCsv(files.training_log, ("step", "elapsedSeconds"))
        self.evals = GrowingCsv(files.checkpoint_evals, ("step",))

    def __call__(self, event: Event) -> None:
        if event["kind"] == "progress":
            row: dict[str, object] = {"step": event["steps"]}
            flatten(
                "", {k: v for k, v in event.items() if k not in {"seq", "v", "time", "steps"}}, row
            )
            self.training.append(row)
        elif event["kind"] == "evaluation":
            row = {"step": event["steps"]}
            flatten("", event["metrics"], row)
            self.evals.append(row)
