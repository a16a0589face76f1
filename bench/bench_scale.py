"""A fleet's footage (issue 28): the same job over 12, 120 and 1,200 stored sessions, the new
footage fixed (2 fresh sessions each time), measured as a scheduler sees it.

For each size: a root of synthesised sessions cloned to the size (hard links; their store
entries cloned from the sources', so building the root decodes nothing), one job to write the
manifest (not measured), 2 fresh sessions, then the measured job: its wall time, the decode
phase's seconds (`decode` to `train` phase events), its peak RSS and the most file descriptors
it held (sampled from /proc every 20 ms). Printed as ratios against the 12-session job in the
same run (required: within 1.5x), then a projection to 10,000 sessions and 500 hours.

    .venv/bin/python bench/bench_scale.py [--sizes 12,120,1200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fleet import clone_sessions, clone_store_entries

JOB = {"passesPerJob": 1, "maxStepsPerJob": 50, "minimumSamples": 1, "maxSamples": 2000,
       "cacheMaxMegabytes": 10_000_000,  # the clones share their files: nothing to drop
       "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
       "probeMaxSeconds": 2, "batchSize": 32, "threads": 2}  # fmt: skip
SESSION_MINUTES = 0.5


def cli(*args: str) -> list[dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "rovertrain", *args], capture_output=True)
    if done.returncode not in (0, 3):
        raise SystemExit(done.stderr.decode()[-3000:])
    return [json.loads(line) for line in done.stdout.splitlines()]


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def measured_job(job: Path) -> dict[str, float]:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "rovertrain", "run", "--job", str(job)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    most = [0]

    def sample() -> None:
        while process.poll() is None:
            most[0] = max(most[0], open_files(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    wall = time.perf_counter() - started
    sampler.join()
    events = [json.loads(line) for line in output.splitlines()]
    phases = {e["phase"]: float(e["elapsedSeconds"]) for e in events if e["kind"] == "phase"}
    (store,) = [e for e in events if e["kind"] == "store"]
    complete = events[-1]
    decoded = [e["diagnostics"] for e in events if e["kind"] == "dataset"]
    return {
        "wall": wall,
        "decode": sum(d["decodeSeconds"] for d in decoded if not d["cached"]),
        "dataset": phases["train"] - phases["decode"],
        "rss": float(complete["diagnostics"]["peakRssMiB"]),
        "files": float(most[0]),
        "events": float(len(events)),
        "read": float(store["read"]),
        "new": float(store["new"]),
    }


def root_of(size: int, scratch: Path) -> Path:
    root = scratch / f"root-{size}"
    cli("synth", "--out", str(root), "--sessions", "4", "--minutes", str(SESSION_MINUTES),
        "--seed", "4")  # fmt: skip
    cli("inspect", str(root))  # the sources' store entries
    (root / "training" / "cache" / "manifest.parquet").unlink()
    clone_store_entries(root, clone_sessions(root, size - 4, "fleet"))
    job = root / "job-scale.json"
    job.write_text(json.dumps({"root": str(root), "seed": 1, "config": JOB}))
    cli("run", "--job", str(job))  # writes the manifest: an established store
    fresh = scratch / f"fresh-{size}"
    cli("synth", "--out", str(fresh), "--sessions", "2", "--minutes", str(SESSION_MINUTES),
        "--seed", "77")  # fmt: skip
    for session in (fresh / "recordings").iterdir():
        os.rename(session, root / "recordings" / f"new-{session.name}")
        meta_path = root / "recordings" / f"new-{session.name}" / "session.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "sessionId": f"new-{session.name}"}))
    return job


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="12,120,1200")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    rows: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            job = root_of(size, Path(scratch))
            rows[size] = measured_job(job)
            print(f"{size} sessions: {rows[size]}", file=sys.stderr, flush=True)
    base = rows[sizes[0]]
    keys = ("wall", "decode", "rss", "files", "dataset")
    print(f"{'sessions':>8} {'wall s':>7} {'decode s':>8} {'RSS MiB':>8} {'files':>6} "
          f"{'dataset s':>9} {'events':>6} {'read':>5}   ratios to {sizes[0]}: "
          + ", ".join(keys))  # fmt: skip
    worst = 1.0
    for size, row in rows.items():
        ratios = [row[key] / max(base[key], 1e-9) for key in keys]
        worst = max(worst, *ratios[:4])  # the four; the dataset phase is shown too
        print(f"{size:>8} {row['wall']:>7.1f} {row['decode']:>8.2f} {row['rss']:>8.0f} "
              f"{row['files']:>6.0f} {row['dataset']:>9.2f} {row['events']:>6.0f} "
              f"{row['read']:>5.0f}   " + ", ".join(f"{ratio:.2f}x" for ratio in ratios))  # fmt: skip
    print(f"worst ratio of wall, decode, RSS, files {worst:.2f}x (required: within 1.5x) -> "
          + ("PASS" if worst <= 1.5 else "FAIL"))  # fmt: skip
    if len(sizes) >= 2:
        first, last = sizes[0], sizes[-1]
        per_session = (rows[last]["wall"] - rows[first]["wall"]) / (last - first)
        print(f"listed-session cost: {1000 * per_session:.2f} ms each; at 10,000 sessions the "
              f"job would take {rows[last]['wall'] + per_session * (10_000 - last):.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
