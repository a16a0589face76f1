"""`rovertrain review`: serve the review page until interrupted (needs rovertrain[review])."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.exitcodes import ExitCode
from rovertrain.job.preflight import check_root_usable
from rovertrain.protocol.console import console_line
from rovertrain.protocol.events import EventStream


def serve_review(stream: EventStream, root_text: str, host: str, port: int) -> int:
    root = Path(root_text).resolve()
    check_root_usable(root)  # the page writes curation.json and replays: as a job's root
    try:
        from rovertrain.review.server import ReviewServer, ReviewSettings, new_token
    except ImportError as missing:
        raise RovertrainError(
            "missing_dependency",
            f"rovertrain review needs the review extra: pip install 'rovertrain[review]' ({missing})",
        ) from None
    server = ReviewServer(ReviewSettings(root, host, port, new_token()))
    try:
        url = server.start()
    except OSError as error:
        raise RovertrainError(
            "usage", f"cannot listen on {host}:{port}: {error.strerror}"
        ) from None
    stream.emit("review", url=url, root=str(root))
    console_line(f"review page: {url}  (Ctrl-C stops it)")
    stopped = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stopped.set())
    stopped.wait()
    server.stop()
    return ExitCode.COMPLETED
