"""The review page's server: pages, the root's data as JSON, the video, curation writes.

Safety: it binds to localhost unless told otherwise; a request naming another host is
refused (a web page elsewhere cannot reach it through DNS rebinding); every write needs the
token that only the served pages carry; every path comes from an id checked against what the
root holds, so nothing outside the root is served. The curation file is written under its
lock, atomically (data/curation.py): a running job read it at its start and is not touched.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aiohttp import web

from rovertrain.contracts.errors import RovertrainError, SkipSession
from rovertrain.contracts.identifiers import valid_identifier
from rovertrain.contracts.json_types import JsonObject
from rovertrain.contracts.strict_json import BadJson, parse_json
from rovertrain.data.curation import add_left_out, read_curation, remove_left_out
from rovertrain.data.recording import Recording, list_sessions, load_recording
from rovertrain.review.fleet import Fleet
from rovertrain.review.jobs import list_jobs, read_chunk
from rovertrain.review.refusal import Refusal
from rovertrain.review.replays import Replays
from rovertrain.review.timeline import decision_rows, disagreements, session_commands
from rovertrain.review.video import serve_video

TOKEN_HEADER = "X-Review-Token"
MAX_BODY_BYTES = 64 * 1024
PAGES = {"fleet": "fleet.html", "session": "session.html", "job": "job.html"}
ASSETS = {
    "review.js": "text/javascript",
    "review.css": "text/css",
    "timeline.js": "text/javascript",
}
VIDEO_TYPES = {".webm": "video/webm", ".mkv": "video/x-matroska", ".mp4": "video/mp4"}
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Every answer: no other site may frame the pages (a framed page could be clicked into
# leaving stretches out), and the pages load nothing but this server's own files.
SAFETY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ReviewSettings:
    root: Path
    host: str
    port: int
    token: str


def new_token() -> str:
    return secrets.token_urlsafe(24)


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a request may carry (None: any, when bound beyond loopback)."""
    if host not in LOOPBACK:
        return None
    names = {"127.0.0.1", "localhost", "[::1]", host}
    return frozenset(f"{name}:{port}" for name in names)


def error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status)


def build_app(review: Review) -> web.Application:
    app = web.Application(
        middlewares=[review.guard], client_max_size=MAX_BODY_BYTES, handler_args=None
    )
    app.add_routes(
        [
            web.get("/", review.page("fleet")),
            web.get("/session/{session}", review.page("session")),
            web.get("/job/{job}", review.page("job")),
            web.get("/static/{name}", review.asset),
            web.get("/api/fleet", review.fleet_data),
            web.get("/api/sessions/{session}", review.session_data),
            web.get("/api/sessions/{session}/video", review.video),
            web.get("/api/replays/{model}/{session}", review.replay_state),
            web.post("/api/replays/{model}/{session}", review.replay_start),
            web.get("/api/jobs/{job}/events", review.job_events),
            web.get("/api/curation", review.curation),
            web.post("/api/curation", review.leave_out),
            web.delete("/api/curation/{entry}", review.undo),
        ]
    )
    app.on_shutdown.append(review.shutdown)
    return app


class Review:
    def __init__(self, settings: ReviewSettings):
        self.settings = settings
        self.root = settings.root
        self.fleet = Fleet(settings.root)
        self.replays = Replays(settings.root)
        self.hosts = allowed_hosts(settings.host, settings.port)

    def listening_on(self, port: int) -> None:
        """The port the server got (port 0 asks for a free one): the Host it answers to."""
        self.hosts = allowed_hosts(self.settings.host, port)

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await self._answer(request, handler)
        if not response.prepared:  # a streamed video has sent its headers already
            response.headers.update(SAFETY_HEADERS)
        return response

    async def _answer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.hosts is not None and request.host not in self.hosts:
            return error(403, "wrong_host", f"this server answers to {sorted(self.hosts)[0]}")
        if request.method not in ("GET", "HEAD"):
            given = request.headers.get(TOKEN_HEADER, "").encode("utf-8", "surrogateescape")
            if not secrets.compare_digest(given, self.settings.token.encode()):
                return error(403, "bad_token", "writes need the token of a page this server served")
        try:
            return await handler(request)
        except Refusal as refusal:
            return error(refusal.status, refusal.code, refusal.message)
        except RovertrainError as failure:
            return error(400, failure.code, failure.message)
        except web.HTTPRequestEntityTooLarge:
            return error(413, "too_large", f"a request body holds at most {MAX_BODY_BYTES} bytes")
        except web.HTTPException:
            raise  # aiohttp's own answers (no such route, method not allowed)
        except Exception as failure:  # a bug: said as JSON, the server goes on
            return error(500, "internal", f"{type(failure).__name__}: {str(failure)[:300]}")

    def page(self, name: str) -> Handler:
        async def serve(request: web.Request) -> web.StreamResponse:
            html = _static_text(PAGES[name]).replace("__TOKEN__", self.settings.token)
            return web.Response(text=html, content_type="text/html")

        return serve

    async def asset(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in ASSETS:
            return error(404, "not_found", "no such file")
        return web.Response(text=_static_text(name), content_type=ASSETS[name])

    async def fleet_data(self, request: web.Request) -> web.StreamResponse:
        def collect() -> dict[str, object]:
            jobs = list_jobs(self.root)
            return {
                "root": str(self.root),
                "sessions": self.fleet.sessions(jobs),
                "models": self.fleet.models(),
                "jobs": [job.to_json() for job in jobs],
            }

        return web.json_response(await asyncio.to_thread(collect))

    def _recording_of(self, request: web.Request) -> Recording:
        session_id = request.match_info["session"]
        if not valid_identifier(session_id) or session_id not in list_sessions(self.root):
            raise Refusal(404, "not_found", f"no session {session_id!r} under this root")
        try:
            return load_recording(self.root, session_id)
        except SkipSession as skip:
            raise Refusal(400, skip.code, f"session {session_id}: {skip.reason}") from None

    def _commands_of(self, recording: Recording) -> list[JsonObject]:
        try:
            return session_commands(recording)
        except SkipSession as skip:
            message = f"session {recording.session_id}: {skip.reason}"
            raise Refusal(400, skip.code, message) from None

    async def session_data(self, request: web.Request) -> web.StreamResponse:
        def collect() -> dict[str, object]:
            recording = self._recording_of(request)
            session_id = recording.session_id
            row = self.fleet.session(session_id)
            entries = read_curation(self.root).for_session(session_id)
            return {
                "session": row,
                "offsetMs": recording.video_offset_ms,
                "video": f"/api/sessions/{session_id}/video",
                "commands": self._commands_of(recording),
                "leftOut": [entry.to_json() for entry in entries],
                "models": [
                    {"id": model["id"], "name": model["name"], "current": model["current"]}
                    for model in self.fleet.models()
                    if model["valid"]
                ],
            }

        return web.json_response(await asyncio.to_thread(collect))

    async def video(self, request: web.Request) -> web.StreamResponse:
        recording = await asyncio.to_thread(self._recording_of, request)
        path = recording.video_path
        content_type = VIDEO_TYPES.get(path.suffix.lower(), "application/octet-stream")
        return await serve_video(request, path, content_type)

    def _model_id(self, request: web.Request) -> str:
        model_id = request.match_info["model"]
        if not any(model["id"] == model_id and model["valid"] for model in self.fleet.models()):
            raise Refusal(404, "not_found", f"no valid published model {model_id!r}")
        return model_id

    async def replay_state(self, request: web.Request) -> web.StreamResponse:
        def collect() -> dict[str, object]:
            model_id, session_id = self._model_id(request), request.match_info["session"]
            self._recording_of(request)
            found = self.replays.state(model_id, session_id)
            return {
                "state": found.state,
                "error": found.error,
                "decisions": decision_rows(found.decisions),
                "disagreements": [list(pair) for pair in disagreements(found.decisions)],
            }

        return web.json_response(await asyncio.to_thread(collect))

    async def replay_start(self, request: web.Request) -> web.StreamResponse:
        def start() -> None:
            model_id = self._model_id(request)
            self._recording_of(request)
            self.replays.start(model_id, request.match_info["session"])

        await asyncio.to_thread(start)
        return await self.replay_state(request)

    async def job_events(self, request: web.Request) -> web.StreamResponse:
        job_id = request.match_info["job"]
        try:
            offset = int(request.query.get("from", "0"))
        except ValueError:
            return error(400, "bad_offset", "from must be a byte offset")
        jobs = await asyncio.to_thread(list_jobs, self.root) if JOB_ID.match(job_id) else []
        job = next((job for job in jobs if job.id == job_id), None)
        if job is None:
            return error(404, "not_found", f"no job {job_id!r} under this root")
        running = job.state == "running"
        chunk = await asyncio.to_thread(read_chunk, job.path, offset, not running)
        return web.json_response(
            {
                "events": chunk.events,
                "next": chunk.next_offset,
                "size": chunk.size,
                "state": job.state,
                "running": running,
            }
        )

    async def curation(self, request: web.Request) -> web.StreamResponse:
        found = await asyncio.to_thread(read_curation, self.root)
        return web.json_response({"leftOut": [entry.to_json() for entry in found.entries]})

    async def leave_out(self, request: web.Request) -> web.StreamResponse:
        try:  # the project's strict JSON: depth, duplicate keys, lone surrogates refused
            body = parse_json(await request.text())
        except (BadJson, UnicodeDecodeError) as bad:
            return error(400, "bad_request", f"the body must be a JSON object: {bad}")
        if not isinstance(body, dict):
            return error(400, "bad_request", "the body must be a JSON object")
        session_id = body.get("sessionId")
        if not isinstance(session_id, str) or session_id not in list_sessions(self.root):
            return error(404, "not_found", f"no session {session_id!r} under this root")
        start, end, reason = (
            _number(body.get("startMs")),
            _number(body.get("endMs")),
            body.get("reason"),
        )
        if start is None or end is None:
            return error(400, "bad_request", "startMs and endMs must be numbers (ms)")
        if not isinstance(reason, str):
            return error(400, "bad_request", "reason must be a string")
        entry = await asyncio.to_thread(add_left_out, self.root, session_id, start, end, reason)
        return web.json_response(entry.to_json(), status=201)

    async def undo(self, request: web.Request) -> web.StreamResponse:
        entry_id = request.match_info["entry"]
        removed = await asyncio.to_thread(remove_left_out, self.root, entry_id)
        if not removed:
            return error(404, "not_found", f"no left-out entry {entry_id!r} (already undone?)")
        return web.json_response({"removed": entry_id})

    async def shutdown(self, app: web.Application) -> None:
        self.replays.stop_all()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _static_text(name: str) -> str:
    return resources.files("rovertrain.review").joinpath("static", name).read_text("utf-8")


class ReviewServer:
    """The server on its own thread and event loop: `start` returns once it listens (port 0
    picks a free one), `stop` ends it and the replays it started."""

    def __init__(self, settings: ReviewSettings):
        self.settings = settings
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> str:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        self.url = future.result(timeout=30)
        return self.url

    async def _listen(self) -> str:
        settings = self.settings
        review = Review(settings)
        self._runner = web.AppRunner(build_app(review), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, settings.host, settings.port)
        await site.start()
        port = _bound_port(self._runner, settings.port)
        review.listening_on(port)
        threading.Thread(target=review.fleet.warm, daemon=True).start()
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        return f"http://{host}:{port}/"

    def stop(self) -> None:
        if self._runner is not None:
            runner = self._runner
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked
