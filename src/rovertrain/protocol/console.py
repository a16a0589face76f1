"""Human output on stderr: rich when stderr is a terminal, plain lines otherwise."""

from __future__ import annotations

import sys


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def console_line(text: str) -> None:
    try:
        if stderr_is_terminal():
            from rich.console import Console

            Console(stderr=True, highlight=False).print(text, markup=False)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
