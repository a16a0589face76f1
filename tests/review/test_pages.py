"""The review page in a real browser: the fleet, a session's video and timeline, leaving a
stretch out and undoing it, a live job's curves."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from conftest import start_run, write_job
from review.conftest import FAST, Served


def fleet_rows(page: Any, table: str) -> list[str]:
    return page.eval_on_selector_all(f"#{table} tbody tr", "rows => rows.map(r => r.innerText)")


def test_the_fleet_table_lists_sessions_and_models_sortable_and_filterable(
    page: Any, served: Served
) -> None:
    page.goto(served.url + "/")
    page.wait_for_selector("#sessions tbody tr")
    sessions = sorted(p.name for p in (served.root / "recordings").iterdir())
    ids = page.eval_on_selector_all(
        "#sessions tbody tr", "rows => rows.map(r => r.dataset.session)"
    )
    assert sorted(ids) == sessions
    models = page.eval_on_selector_all("#models tbody tr", "rows => rows.map(r => r.dataset.model)")
    published = [p.name for p in (served.root / "training" / "checkpoints").iterdir()]
    assert sorted(models) == sorted(name for name in published if not name.startswith("."))
    # held-out and training both shown, every session read by the job
    text = "\n".join(fleet_rows(page, "sessions"))
    assert "held-out" in text and "training" in text and "decoded" in text
    # sort by id descending: two clicks on the header
    header = page.locator("#sessions th[data-key=id]")
    header.click()
    header.click()
    ids = page.eval_on_selector_all(
        "#sessions tbody tr", "rows => rows.map(r => r.dataset.session)"
    )
    assert ids == sorted(sessions, reverse=True)
    # filter by text: one session left
    page.fill("#text-filter", sessions[1])
    ids = page.eval_on_selector_all(
        "#sessions tbody tr", "rows => rows.map(r => r.dataset.session)"
    )
    assert ids == [sessions[1]]
    assert page.inner_text("#session-count") == f"1 of {len(sessions)}"
    # one rover: exactly its sessions
    page.fill("#text-filter", "")
    rovers = {
        s: json.loads((served.root / "recordings" / s / "session.json").read_text())["roverId"]
        for s in sessions
    }
    rover = sorted(set(rovers.values()))[0]
    page.select_option("#rover-filter", rover)
    ids = page.eval_on_selector_all(
        "#sessions tbody tr", "rows => rows.map(r => r.dataset.session)"
    )
    assert sorted(ids) == sorted(s for s in sessions if rovers[s] == rover)
    page.select_option("#rover-filter", "")
    assert len(fleet_rows(page, "sessions")) == len(sessions)
    page.fill("#date-from", "2099-01-01")
    assert fleet_rows(page, "sessions") == []


def open_session(page: Any, served: Served) -> str:
    session_id = sorted(p.name for p in (served.root / "recordings").iterdir())[0]
    page.goto(f"{served.url}/session/{session_id}")
    page.wait_for_function("() => document.getElementById('video').readyState >= 1")
    return session_id


def test_a_sessions_video_plays_and_a_click_on_the_timeline_seeks_it(
    page: Any, served: Served
) -> None:
    session_id = open_session(page, served)
    assert page.inner_text("#session-id") == session_id
    duration = page.evaluate("document.getElementById('video').duration")
    assert duration > 5
    box = page.locator("#timeline").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    seconds = page.evaluate("document.getElementById('video').currentTime")
    # the timeline spans the commands and the video on the command clock: the middle is
    # close to the middle of the video
    assert 0.3 * duration < seconds < 0.7 * duration
    page.wait_for_function("() => document.getElementById('video').readyState >= 2")
    # the playhead follows the video
    playhead = float(page.get_attribute("#timeline", "data-playhead-ms") or 0)
    offset = json.loads((served.root / "recordings" / session_id / "session.json").read_text())
    assert abs(playhead - (seconds * 1000 + offset["video"].get("offsetMs", 0))) < 150


def test_a_chosen_models_decisions_show_on_the_timeline(page: Any, served: Served) -> None:
    open_session(page, served)
    page.select_option("#model", index=1)
    page.click("#replay")
    page.wait_for_function(
        "() => document.getElementById('replay-state').dataset.state === 'done'", timeout=120_000
    )
    text = page.inner_text("#replay-state")
    assert "ticks replayed" in text and "stretches of disagreement" in text
    ticks = int(text.split()[0])
    assert ticks > 100
    # drawn on the timeline: the model's commands and every stretch the server found
    model = page.eval_on_selector("#model", "select => select.value")
    session = page.inner_text("#session-id")
    with urllib.request.urlopen(f"{served.url}/api/replays/{model}/{session}") as response:
        replay = json.loads(response.read())
    fired = sum(any(t["fire"] for t in d["types"].values()) for d in replay["decisions"])
    assert fired > 0
    canvas = page.locator("#timeline")
    assert int(canvas.get_attribute("data-model-marks") or 0) >= fired
    assert int(canvas.get_attribute("data-disagreement-bands") or -1) == len(
        replay["disagreements"]
    )


def test_leaving_a_stretch_out_and_undoing_it(page: Any, served: Served) -> None:
    session_id = open_session(page, served)
    box = page.locator("#timeline").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.3, y, steps=5)
    page.mouse.up()
    assert "selected" in page.inner_text("#selection")
    page.click("#leave-out")  # no reason yet: refused on the page, nothing written
    assert "say why" in page.inner_text("#write-error")
    assert not (served.root / "curation.json").exists()
    selected = [
        float(page.get_attribute("#selection", name) or "nan")
        for name in ("data-start-ms", "data-end-ms")
    ]
    span = [float(page.evaluate(f"view.{name}")) for name in ("t0", "t1")]
    page.fill("#reason", "bumped the wall")
    page.click("#leave-out")
    page.wait_for_selector("#left-out tbody tr")
    document = json.loads((served.root / "curation.json").read_text())
    [entry] = document["leftOut"]
    assert entry["sessionId"] == session_id and entry["reason"] == "bumped the wall"
    # the stretch written is the one dragged: 20% to 30% of the timeline
    assert [entry["startMs"], entry["endMs"]] == selected
    for value, share in zip(selected, (0.2, 0.3), strict=True):
        assert abs(value - (span[0] + share * (span[1] - span[0]))) < 0.01 * (span[1] - span[0])
    assert page.get_attribute("#timeline", "data-left-out-bands") == "1"
    # a reload shows it (read back from the file, not from the page's memory)
    page.reload()
    page.wait_for_selector(f"#left-out tbody tr[data-entry='{entry['id']}']")
    page.click("[data-testid=undo]")
    page.wait_for_function("() => document.querySelectorAll('#left-out tbody tr').length === 0")
    assert json.loads((served.root / "curation.json").read_text())["leftOut"] == []
    assert page.get_attribute("#timeline", "data-left-out-bands") == "0"


def test_a_live_jobs_curves_grow_while_it_runs(page: Any, served: Served) -> None:
    job = write_job(served.root, **{**FAST, "maxStepsPerJob": 400, "passesPerJob": 50})
    process = start_run(job)
    try:
        job_id = wait_for_job_log(served.root, before=known_jobs(served.root))
        page.goto(f"{served.url}/job/{job_id}")
        page.wait_for_function("() => document.body.dataset.progressEvents >= 2", timeout=120_000)
        assert page.inner_text("#job-state") == "running"
        first = int(page.evaluate("document.body.dataset.progressEvents"))
        page.wait_for_function(
            f"() => document.body.dataset.progressEvents > {first}", timeout=120_000
        )
        page.wait_for_function(
            "() => document.getElementById('job-state').textContent === 'finished'", timeout=300_000
        )
    finally:
        process.wait(timeout=300)
    assert "complete" in page.inner_text("#outcome")
    points = int(page.get_attribute("#loss-chart path[data-series=loss]", "data-points") or 0)
    assert points == int(page.evaluate("document.body.dataset.progressEvents")) > first
    assert page.locator("#eval-chart line[data-gate=minPrecision]").count() == 1


def known_jobs(root: Path) -> set[str]:
    jobs = root / "training" / "jobs"
    return {p.name for p in jobs.iterdir()} if jobs.is_dir() else set()


def wait_for_job_log(root: Path, before: set[str]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name in known_jobs(root) - before:
            if (root / "training" / "jobs" / name / "events.ndjson").is_file():
                return name
        time.sleep(0.1)
    raise AssertionError("the job wrote no event log")
