"""Memory of a job: pool bytes per window and peak RSS for maxSamples 5k and 20k.

Generates a synthetic data set (24 sessions x 2 minutes) unless ROOT is given, then runs one
short job per setting (1 training step, so the figures are the data's, not the optimizer's)
and prints the pool's bytes, bytes per window and the job's peak RSS.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def run(root: Path, max_samples: int) -> dict:
    job = json.loads((root / "job.json").read_text())
    job["config"].update(maxSamples=max_samples, maxStepsPerJob=1, evalEverySteps=0)
    path = root / f"job-{max_samples}.json"
    path.write_text(json.dumps(job))
    output = subprocess.run([sys.executable, "-m", "rovertrain", "run", "--job", str(path)],
                            capture_output=True, check=True).stdout  # fmt: skip
    complete = json.loads(output.splitlines()[-1])
    rows = complete["diagnostics"]["dataset"]
    windows = sum(row["sampledWindows"] for row in rows)
    return {
        "windows": windows,
        **{k: complete["diagnostics"][k] for k in ("poolBytes", "peakRssMiB")},
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch) / "root"
        if not (root / "job.json").exists():
            subprocess.run([sys.executable, "-m", "rovertrain", "synth", "--out", str(root),
                            "--sessions", "24", "--minutes", "2"], check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
        for max_samples in (5000, 20000):
            figures = run(root, max_samples)
            per_window = figures["poolBytes"] / max(1, figures["windows"])
            print(f"maxSamples {max_samples:>6}: {figures['windows']} windows kept, pool "
                  f"{figures['poolBytes'] / 2**20:.1f} MiB ({per_window:.0f} B/window), "
                  f"peak RSS {figures['peakRssMiB']:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
