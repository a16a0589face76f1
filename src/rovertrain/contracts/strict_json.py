"""Strict JSON: the one parser for every JSON text a user hands the product.

Recordings (session.json, each command line), job files and the importers' metadata read
through `parse_json`. Beyond RFC 8259 it refuses NaN/Infinity, numbers beyond a double's
range, duplicate keys, unpaired surrogate escapes and nesting deeper than a limit, each with a
stable reason (the recording format's drop reasons, docs/recording-format.md).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects in session.json or a command line (top level is 1)."""
_LARGEST_DOUBLE = sys.float_info.max
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class BadJson(Exception):
    """A JSON text that breaks a rule of the format; `reason` is one of DROP_REASONS.

    `detail`: what was wrong without the "not valid JSON" frame (a caller that frames it
    itself, as the job file's error does, says it once)."""

    def __init__(self, reason: str, message: str, detail: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.detail = message if detail is None else detail


def _reject_constant(name: str) -> Any:
    raise BadJson("invalid_json", f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadJson("number_out_of_range", f"number {text[:40]} is beyond a double's range")
    return value


def _parse_int(text: str) -> int:
    # 309 digits reach past 1.8e308; checking the length first keeps int() cheap.
    if len(text) > 310 or abs(value := int(text)) > _LARGEST_DOUBLE:
        raise BadJson("number_out_of_range", f"number {text[:40]}… is beyond a double's range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise BadJson("duplicate_key", f"duplicate key {show(key)}")
            seen.add(key)
    return result


def _check_tree(value: Any, max_depth: int, strings: bool) -> None:
    """Refuse nesting deeper than `max_depth` and (if `strings`) unpaired surrogates."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise BadJson("too_deep", f"nested deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
            if strings and isinstance(item, dict):
                pending.extend((key, depth) for key in item)
        elif strings and isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise BadJson("invalid_unicode", "a string holds an unpaired surrogate") from None


_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_parse_float,
    parse_int=_parse_int,
    object_pairs_hook=_unique_keys,
)


def parse_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse one JSON text by the format's rules; raise BadJson (with a reason) otherwise.

    Beyond RFC 8259: no NaN/Infinity, every number within a double's range, no duplicate keys,
    no unpaired surrogate escapes, arrays and objects nested at most `max_depth` deep.
    """
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise BadJson("too_deep", f"nested deeper than {max_depth} levels") from None
    except ValueError as error:
        detail = str(error)[:120]
        raise BadJson("invalid_json", f"not valid JSON ({detail})", detail) from None
    deep = text.count("[") + text.count("{") > max_depth
    strings = "\\u" in text and bool(_SURROGATE_ESCAPE.search(text))
    if deep or strings:
        _check_tree(value, max_depth, strings)
    return value


def show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
