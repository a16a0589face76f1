"""The review page's answer time for a root of many sessions.

    python bench/bench_review.py [--sessions 1000]

A root of `--sessions` recordings (two-minute drives: a session.json and a command log of
1,200 lines, the video a placeholder: the fleet page never decodes it) and the event logs of
`--jobs` jobs (20) that each read every session (a `dataset` event per session, one in 50
`skipped`), the newest still running (its log gains a `progress` line before every request
of a round, as a training job's does), is served by the review server on a free port; an HTTP client on the same machine times, over 20 rounds each, the
fleet page (HTML), the fleet's data (`/api/fleet`: every session and model), one session's data
(its 1,200 commands) and, as the reference, a static JSON answer of the fleet's size from a
bare aiohttp server in the same process (the HTTP stack's own floor). The first `/api/fleet`
(nothing cached: every session's files read) is timed once. Required: each page's median
under 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from aiohttp import web

from rovertrain.review.server import ReviewServer, ReviewSettings, new_token

ROUNDS = 20
STARTED = {"kind": "started", "v": 1, "seq": 0, "time": 0, "jobId": "j", "version": "0"}


def write_root(root: Path, sessions: int) -> None:
    for index in range(sessions):
        session_id = f"rover-{index % 7}-{index:05d}"
        folder = root / "recordings" / session_id
        folder.mkdir(parents=True)
        meta = {
            "format": "rovertrain-recording/1",
            "sessionId": session_id,
            "roverId": f"rover-{index % 7}",
            "controlProfile": "gamepad",
            "startedAt": f"2026-{1 + index % 12:02d}-{1 + index % 28:02d}T10:00:00Z",
            "video": {"file": "camera.webm", "offsetMs": 80},
            "commands": {"file": "commands.ndjson"},
        }
        (folder / "session.json").write_text(json.dumps(meta))
        (folder / "camera.webm").write_bytes(b"\x1a\x45\xdf\xa3" + bytes(1020))
        lines = [
            json.dumps({"t": t * 100, "type": "drive", "values": {"speed": 0.5, "turn": 0.1}})
            for t in range(1200)
        ]
        (folder / "commands.ndjson").write_text("\n".join(lines) + "\n")


def write_jobs(root: Path, jobs: int, sessions: list[str]) -> Path:
    """`jobs` event logs; the newest has no terminal event (the page sees it as running
    while the bench holds the root's lock). Returns the newest log."""
    newest = root
    for number in range(jobs):
        folder = root / "training" / "jobs" / f"job-2026{number:04d}"
        folder.mkdir(parents=True)
        lines = [json.dumps({**STARTED, "jobId": folder.name})]
        for index, session_id in enumerate(sessions):
            if index % 50 == number % 50:
                event = {"kind": "skipped", "sessionId": session_id, "code": "no_windows"}
            else:
                event = {"kind": "dataset", "sessionId": session_id, "windows": 1200}
            lines.append(json.dumps({**event, "v": 1, "seq": index + 1, "time": 0}))
        if number < jobs - 1:
            lines.append(json.dumps({"kind": "complete", "v": 1, "seq": 0, "time": 0}))
        newest = folder / "events.ndjson"
        newest.write_text("\n".join(lines) + "\n")
    return newest


def timed(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url) as response:
        size = len(response.read())
    return (time.perf_counter() - started) * 1000, size


def reference_server(body: bytes) -> str:
    """A bare aiohttp answer of the same bytes: what any page of this size costs."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def start() -> str:
        app = web.Application()
        app.router.add_get("/", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/"

    return asyncio.run_coroutine_threadsafe(start(), loop).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as held:
        root = Path(folder)
        write_root(root, options.sessions)
        ids = sorted(p.name for p in (root / "recordings").iterdir())
        running = write_jobs(root, options.jobs, ids)
        lock = held.enter_context(open(root / "training" / ".lock", "a+b"))
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # the newest job runs
        server = ReviewServer(ReviewSettings(root, "127.0.0.1", 0, new_token()))
        url = server.start()
        cold, fleet_bytes = timed(url + "api/fleet")
        with urllib.request.urlopen(url + "api/fleet") as response:
            reference = reference_server(response.read())
        pages = {
            "fleet page (HTML)": url,
            "/api/fleet": url + "api/fleet",
            "/api/sessions/ID": url + "api/sessions/rover-3-00500",
            "reference: bare aiohttp, same bytes": reference,
        }
        results = {name: [] for name in pages}  # type: dict[str, list[float]]
        for step in range(ROUNDS):  # interleaved: load on the machine hits every page alike
            for name, address in pages.items():
                with open(running, "a") as log:  # the running job's log grows
                    log.write(json.dumps({"kind": "progress", "steps": step}) + "\n")
                results[name].append(timed(address)[0])
        server.stop()
    floor = statistics.median(results["reference: bare aiohttp, same bytes"])
    print(
        f"{options.sessions} sessions, {options.jobs} jobs' logs (the newest growing); "
        f"/api/fleet answers {fleet_bytes} bytes"
    )
    print(f"{'page':<38} {'median ms':>10} {'p95 ms':>8} {'x reference':>12}")
    print(f"{'/api/fleet, first (nothing cached)':<38} {cold:>10.1f} {'':>8} {cold / floor:>12.1f}")
    for name, times in results.items():
        times.sort()
        median, p95 = statistics.median(times), times[int(0.95 * (len(times) - 1))]
        print(f"{name:<38} {median:>10.1f} {p95:>8.1f} {median / floor:>12.1f}")
    worst = max(statistics.median(results[name]) for name in list(pages)[:3])
    print(f"slowest page median {worst:.1f} ms: {'ok' if worst < 200 else 'OVER'} (< 200 ms)")
    if worst >= 200:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
