"""Entry point of a decoder child process (spawned, one per session)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main(request: dict[str, Any], conn: Any) -> None:
    _die_with_parent()
    # The parent handles SIGINT/SIGTERM; a child only stops when told to or killed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.nice(int(request.get("nice", 0)))
    from rovertrain.data.decode import DecodeLimits, decode_to_file
    from rovertrain.errors import SkipSession

    frames_path = Path(request["framesPath"])
    temporary = frames_path.with_name(f".{frames_path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as sink:
            result = decode_to_file(
                Path(request["videoPath"]),
                float(request["offsetMs"]),
                DecodeLimits(**request["limits"]),
                sink,
                lambda frames: conn.send(("frames", frames)),
            )
        os.replace(temporary, frames_path)
        from rovertrain.data.cache import CacheEntry, write_meta

        entry = CacheEntry(request["name"], request["key"], frames_path, Path(request["metaPath"]))
        write_meta(entry, result)
        conn.send(("ok", None))
    except SkipSession as skip:
        conn.send(("skip", skip.code, skip.reason))
    except MemoryError:
        conn.send(("skip", "too_large", "decoding ran out of memory"))
    except Exception as error:
        conn.send(("skip", "decode_error", f"{type(error).__name__}: {str(error)[:300]}"))
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
        conn.close()
