"""The one stderr progress line (`replay`, `import`, `run`): throttled, padded, cleared or
kept, silent when off, and off for good once stderr is gone."""

from __future__ import annotations

import io

from rovertrain.protocol.progress import ProgressLine


class Gone(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError("stderr closed")


def test_a_shorter_text_covers_the_longer_one_and_clear_erases_it() -> None:
    out = io.StringIO()
    line = ProgressLine(True, out, every_seconds=0)
    line.show("abcdef")
    line.show("xy")
    line.clear()
    assert out.getvalue() == "\rabcdef" + "\rxy    " + "\r  \r"


def test_end_keeps_the_line_and_a_second_end_writes_nothing() -> None:
    out = io.StringIO()
    line = ProgressLine(True, out)
    line.show("done")
    line.end()
    line.end()
    assert out.getvalue() == "\rdone\n"


def test_redraws_wait_for_their_time_unless_forced() -> None:
    line = ProgressLine(True, io.StringIO(), every_seconds=3600)
    assert line.ready()
    line.show("first")
    assert not line.ready() and line.ready(force=True)
    late = ProgressLine(True, io.StringIO(), first_after_seconds=3600)
    assert not late.ready()


def test_off_writes_nothing_and_a_gone_stderr_turns_it_off() -> None:
    out = io.StringIO()
    off = ProgressLine(False, out)
    assert not off.ready(force=True)
    off.show("x")
    off.end()
    assert out.getvalue() == ""
    gone = ProgressLine(True, Gone())
    gone.show("x")  # no exception
    assert not gone.enabled and not gone.ready(force=True)
