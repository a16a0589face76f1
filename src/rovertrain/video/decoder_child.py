"""Entry point of a decoder child process (spawned, one per session)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
from multiprocessing.connection import Connection

from rovertrain.video.decode_protocol import DecodeDone, DecodeFailure, DecodeRequest, FramesDecoded

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main(request: DecodeRequest, conn: Connection) -> None:
    _die_with_parent()
    # The parent handles SIGINT/SIGTERM; a child only stops when told to or killed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.nice(request.nice)
    from rovertrain.contracts.errors import SkipSession
    from rovertrain.store.durable import replacing
    from rovertrain.video.decode import decode_to_file

    frames_path = request.frames_path
    try:
        with replacing(frames_path) as temporary, open(temporary, "wb") as sink:
            result = decode_to_file(
                request.video_path,
                request.offset_ms,
                request.limits,
                sink,
                lambda frames: conn.send(FramesDecoded(frames)),
                scratch_dir=frames_path.parent,  # segment scratch files: the store's disk
            )
        # The entry's metadata last: an entry counts only once its JSON names its key.
        with replacing(request.meta_path) as temporary:
            temporary.write_text(json.dumps({"key": request.key, **result.to_json()}))
        conn.send(DecodeDone())
    except SkipSession as skip:
        conn.send(DecodeFailure(skip.code, skip.reason))
    except MemoryError:
        conn.send(DecodeFailure("too_large", "decoding ran out of memory"))
    except Exception as error:
        conn.send(DecodeFailure("decode_error", f"{type(error).__name__}: {str(error)[:300]}"))
    finally:
        conn.close()
