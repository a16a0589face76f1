"""Screenshots of the review page's three views for the README (docs/images/review-*.png).

    python tools/review_screenshots.py ROOT [--out docs/images]

ROOT is a data root with recordings, a finished job and a published model (`make demo`
writes one to demo-data/). The browser is Debian's Chromium, as in tests/review.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rovertrain.review.server import ReviewServer, ReviewSettings, new_token

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    root = options.root.resolve()
    server = ReviewServer(ReviewSettings(root, "127.0.0.1", 0, new_token()))
    url = server.start().rstrip("/")
    options.out.mkdir(parents=True, exist_ok=True)
    fleet = json.loads(_get(url + "/api/fleet"))
    held_out = [s["id"] for s in fleet["sessions"] if s["partition"] == "held-out"]
    job = fleet["jobs"][-1]["id"]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=options.chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(url + "/")
            page.wait_for_selector("#sessions tbody tr")
            page.screenshot(path=str(options.out / "review-fleet.png"))
            page.goto(f"{url}/session/{held_out[0]}")
            page.wait_for_function("() => document.getElementById('video').readyState >= 2")
            page.evaluate("document.getElementById('video').currentTime = 30")
            page.select_option("#model", index=1)
            page.click("#replay")
            page.wait_for_function(
                "() => document.getElementById('replay-state').dataset.state === 'done'",
                timeout=300_000,
            )
            page.wait_for_function(
                "() => (v => !v.seeking && v.readyState >= 3)(document.getElementById('video'))"
            )
            page.screenshot(path=str(options.out / "review-session.png"), full_page=True)
            page.goto(f"{url}/job/{job}")
            page.wait_for_function("() => document.getElementById('job-state').textContent")
            page.wait_for_timeout(500)
            page.screenshot(path=str(options.out / "review-job.png"), full_page=True)
            browser.close()
    finally:
        server.stop()


def _get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url) as response:
        return bytes(response.read())


if __name__ == "__main__":
    main()
