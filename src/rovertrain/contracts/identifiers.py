"""Identifiers: session ids, job ids and file names inside a recording share one rule."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def valid_identifier(value: Any) -> TypeGuard[str]:
    """A string of 1 to 128 letters, digits, `.`, `_` or `-`, not starting with a symbol.

    `fullmatch`: the pattern's `$` would also accept a trailing newline.
    """
    if not isinstance(value, str) or value in {".", ".."}:
        return False
    return IDENTIFIER.fullmatch(value) is not None
