"""The review page's fixtures: a trained root, a server on a free port, Debian's Chromium.

The browser is the distribution's (/usr/bin/chromium, `make browser`), driven by Playwright
without its own browser download. When it cannot start, the tests fail and say why: a green
run must mean the page was really driven.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_root, run_cli, write_job

CHROMIUM = Path(os.environ.get("ROVERTRAIN_CHROMIUM", "/usr/bin/chromium"))
# The flags a root process in a closed network needs (no sandbox, no background traffic).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]
# Trained weights, not good ones: a published model and a job log in a few seconds.
FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 2000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip


@pytest.fixture(scope="module")
def trained_root(synth_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with recordings, a finished job and its published model."""
    root = copy_root(synth_data, tmp_path_factory.mktemp("review"))
    result = run_cli("run", "--job", str(write_job(root, **FAST)))
    assert result.code == 0, result.stderr
    assert result.last()["published"], "the fixture's job must publish a model"
    return root


class Served:
    def __init__(self, root: Path):
        from rovertrain.review.server import ReviewServer, ReviewSettings

        self.token = "test-token-" + os.urandom(6).hex()
        self.server = ReviewServer(ReviewSettings(root, "127.0.0.1", 0, self.token))
        self.url = self.server.start().rstrip("/")
        self.root = root


@pytest.fixture
def served(trained_root: Path) -> Iterator[Served]:
    serving = Served(trained_root)
    yield serving
    serving.server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: the review page cannot be tested. Run `make browser` "
            "(as root on Debian: apt-get install chromium) or set ROVERTRAIN_CHROMIUM.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, f"the page threw: {errors}"
