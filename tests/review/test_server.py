"""The review server under hostile or concurrent use: nothing outside the root, no write
without the page's token, clear errors, nothing lost, a running job untouched."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from conftest import parse_events, read_until, run_cli, start_run, write_job
from review.conftest import FAST, Served
from rovertrain.data.partition import is_held_out


@pytest.fixture
def server(synth_copy: Path) -> Iterator[Served]:
    serving = Served(synth_copy)
    yield serving
    serving.server.stop()


def request(
    served: Served,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = "page",
    host: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, Any]:
    address = urlsplit(served.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    headers = {"Host": host or address.netloc}
    if token is not None:
        headers["X-Review-Token"] = served.token if token == "page" else token
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    if data is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    try:
        return response.status, json.loads(payload)
    except ValueError:
        return response.status, payload


def sessions_of(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "recordings").iterdir())


def leave_out(served: Served, session_id: str, **given: Any) -> tuple[int, Any]:
    body = {"sessionId": session_id, "startMs": 1000, "endMs": 3000, "reason": "test", **given}
    return request(served, "POST", "/api/curation", body)


def test_a_write_without_the_pages_token_is_refused(server: Served) -> None:
    session = sessions_of(server.root)[0]
    body = {"sessionId": session, "startMs": 0, "endMs": 10, "reason": "x"}
    for token in (None, "guess", ""):
        status, answer = request(server, "POST", "/api/curation", body, token=token)
        assert status == 403 and answer["error"] == "bad_token"
    assert not (server.root / "curation.json").exists()
    status, entry = leave_out(server, session)
    assert status == 201
    status, answer = request(server, "DELETE", f"/api/curation/{entry['id']}", token=None)
    assert status == 403
    assert len(json.loads((server.root / "curation.json").read_text())["leftOut"]) == 1


def test_a_request_naming_another_host_is_refused(server: Served) -> None:
    # DNS rebinding: a page on evil.example whose name now points at 127.0.0.1
    port = urlsplit(server.url).port
    status, answer = request(server, "GET", "/api/fleet", host=f"evil.example:{port}")
    assert status == 403 and answer["error"] == "wrong_host"
    assert request(server, "GET", "/api/fleet", host=f"localhost:{port}")[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/static/..%2Fserver.py",
        "/static/%2E%2E/server.py",
        "/static/fleet.html",
        "/api/sessions/..%2F..%2Fetc",
        "/api/sessions/..%2F..%2Fetc/video",
        "/api/sessions/.hidden/video",
        "/api/sessions/no-such-session",
        "/api/jobs/..%2F..%2Frecordings/events",
        "/api/replays/..%2Fcheckpoints/any",
    ],
)
def test_nothing_outside_the_root_or_the_pages_assets_is_served(server: Served, path: str) -> None:
    status, _ = request(server, "GET", path)
    assert status == 404
    # the same routes answer for what the root does hold
    session = sessions_of(server.root)[0]
    for good in ("/static/review.js", f"/api/sessions/{session}", f"/api/sessions/{session}/video"):
        assert request(server, "GET", good)[0] == 200


def test_a_video_that_is_a_link_out_of_the_root_is_refused(server: Served) -> None:
    session = sessions_of(server.root)[0]
    folder = server.root / "recordings" / session
    meta = json.loads((folder / "session.json").read_text())
    video = folder / meta["video"]["file"]
    video.unlink()
    video.symlink_to("/etc/passwd")
    status, answer = request(server, "GET", f"/api/sessions/{session}/video")
    assert status == 400 and answer["error"] == "unsafe_path"


def test_bad_bodies_get_clear_errors_and_write_nothing(server: Served) -> None:
    session = sessions_of(server.root)[0]
    status, answer = request(server, "POST", "/api/curation", raw=b"{not json")
    assert status == 400 and "JSON" in answer["message"]
    status, answer = request(server, "POST", "/api/curation", raw=b"x" * (200 * 1024))
    assert status == 413
    assert leave_out(server, session, startMs=5000, endMs=10)[0] == 400
    assert leave_out(server, session, reason="")[0] == 400
    assert leave_out(server, session, startMs="soon")[0] == 400
    assert leave_out(server, "no-such-session")[0] == 404
    assert not (server.root / "curation.json").exists()


def test_a_malformed_or_huge_curation_file_is_reported_and_kept(server: Served) -> None:
    path = server.root / "curation.json"
    path.write_bytes(b'{"format": "rovertrain-curation/1", "leftOut": [{"id": 1}]}')
    before = path.read_bytes()
    status, answer = request(server, "GET", "/api/curation")
    assert status == 400 and answer["error"] == "invalid_curation"
    session = sessions_of(server.root)[0]
    status, answer = leave_out(server, session)
    assert status == 400 and answer["error"] == "invalid_curation"
    assert path.read_bytes() == before  # a person's hand-written file is never overwritten
    status, answer = request(server, "GET", f"/api/sessions/{session}")
    assert status == 400 and answer["error"] == "invalid_curation"
    with open(path, "wb") as stream:  # sparse: 20 MiB without writing them
        stream.truncate(20 * 2**20)
    status, answer = request(server, "GET", "/api/curation")
    assert status == 400 and answer["error"] == "invalid_curation"
    assert os.path.getsize(path) == 20 * 2**20


def test_two_pages_writing_at_once_lose_nothing(server: Served) -> None:
    sessions = sessions_of(server.root)
    made: list[str] = []
    failures: list[object] = []

    def page(session: str) -> None:
        for index in range(20):
            status, entry = leave_out(server, session, startMs=index * 100, endMs=index * 100 + 50)
            if status == 201:
                made.append(entry["id"])
            else:
                failures.append(entry)

    pages = [threading.Thread(target=page, args=(s,)) for s in sessions[:2]]
    for thread in pages:
        thread.start()
    for thread in pages:
        thread.join()
    assert not failures
    written = json.loads((server.root / "curation.json").read_text())["leftOut"]
    assert sorted(entry["id"] for entry in written) == sorted(made)
    assert len(made) == 40
    # the same undo from two pages: one removes it, the other is told it is gone
    answers = [request(server, "DELETE", f"/api/curation/{made[0]}")[0] for _ in range(2)]
    assert sorted(answers) == [200, 404]


def test_a_write_while_a_job_runs_is_taken_by_the_next_job(server: Served) -> None:
    root = server.root
    job = write_job(root, **{**FAST, "maxStepsPerJob": 200})
    training = [s for s in sessions_of(root) if not is_held_out(s)]
    process = start_run(job)
    lines = read_until(process, "progress")  # decoded and sampled: the curation was read
    status, entry = leave_out(server, training[0], startMs=0, endMs=5000, reason="bumped")
    assert status == 201
    rest, _ = process.communicate(timeout=300)
    assert process.returncode == 0
    during = [e for e in parse_events(b"".join(lines) + rest) if e["kind"] == "dataset"]
    assert during and all(not e["diagnostics"].get("leftOutWindows") for e in during)
    after = run_cli("run", "--job", str(job))
    assert after.code == 0, after.stderr
    counted = {
        e["sessionId"]: e["diagnostics"].get("leftOutWindows", 0) for e in after.of("dataset")
    }
    assert counted[training[0]] > 0
    assert sum(counted.values()) == counted[training[0]]
    assert entry["id"]


def test_a_session_whose_command_log_cannot_be_read_is_a_clear_error(server: Served) -> None:
    session = sessions_of(server.root)[0]
    folder = server.root / "recordings" / session
    meta = json.loads((folder / "session.json").read_text())
    (folder / meta["commands"]["file"]).write_text("not json\n" * 100)
    status, answer = request(server, "GET", f"/api/sessions/{session}")
    assert status == 400 and answer["error"] != "internal", answer
    assert session in answer["message"]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b'{"sessionId": "S", "startMs": 0, "endMs": 9, "reason": "\\ud800"}', "surrogate"),
        (b"[" * 30000 + b"]" * 30000, "deep"),
        (b'{"sessionId": "S", "sessionId": "S"}', "duplicate"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_body_the_strict_json_rules_refuse_is_a_400(server: Served, raw: bytes, why: str) -> None:
    session = sessions_of(server.root)[0]
    status, answer = request(
        server, "POST", "/api/curation", raw=raw.replace(b'"S"', f'"{session}"'.encode())
    )
    assert status == 400 and answer["error"] == "bad_request", (why, answer)
    assert not (server.root / "curation.json").exists()


def test_a_token_that_is_not_text_is_refused_not_a_crash(server: Served) -> None:
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.putrequest("POST", "/api/curation", skip_host=True)
    connection.putheader("Host", address.netloc)
    connection.putheader("X-Review-Token", b"\xff\xfe\xfd")
    connection.putheader("Content-Length", "0")
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 403 and json.loads(response.read())["error"] == "bad_token"


def test_no_other_site_may_frame_the_pages(server: Served) -> None:
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.request("GET", "/")
    response = connection.getresponse()
    response.read()
    assert response.getheader("X-Frame-Options") == "DENY"
    assert "frame-ancestors 'none'" in (response.getheader("Content-Security-Policy") or "")


def test_the_video_is_served_in_byte_ranges_as_a_browser_seeks(server: Served) -> None:
    session = sessions_of(server.root)[0]
    folder = server.root / "recordings" / session
    video = (
        folder / json.loads((folder / "session.json").read_text())["video"]["file"]
    ).read_bytes()
    address = urlsplit(server.url)
    path = f"/api/sessions/{session}/video"
    for header, first, last in [
        ("bytes=100-199", 100, 199),
        ("bytes=-50", len(video) - 50, len(video) - 1),
    ]:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
        connection.request("GET", path, headers={"Range": header})
        response = connection.getresponse()
        assert response.status == 206
        assert response.getheader("Content-Range") == f"bytes {first}-{last}/{len(video)}"
        assert response.read() == video[first : last + 1]
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.request("GET", path, headers={"Range": f"bytes={len(video)}-"})
    response = connection.getresponse()
    assert response.status == 416
    status, whole = request(server, "GET", path)
    assert status == 200 and whole == video


def test_an_interrupted_jobs_log_ends_the_pages_polling(server: Served) -> None:
    folder = server.root / "training" / "jobs" / "job-killed"
    folder.mkdir(parents=True)
    (folder / "events.ndjson").write_bytes(
        b'{"kind": "started", "v": 1, "seq": 0, "time": 0}\n{"kind": "prog'
    )
    status, answer = request(server, "GET", "/api/jobs/job-killed/events")
    assert status == 200 and answer["state"] == "interrupted" and not answer["running"]
    assert answer["next"] == answer["size"]  # the torn line is passed: nothing left to wait for
