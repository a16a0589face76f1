"""The shape the code keeps: no function over 80 lines, no formatter opt-outs.

A long function is split into named steps; a line the formatter would lay out badly is
rewritten (keyword arguments, a small record) rather than exempted with `# fmt: skip`.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "rovertrain"
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_no_function_is_longer_than_80_lines() -> None:
    offenders = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    where = path.relative_to(SOURCE.parent)
                    offenders.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    assert not offenders, (
        f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n"
        + "\n".join(offenders)
    )


def test_no_source_opts_out_of_the_formatter() -> None:
    files = [
        path
        for path in sorted(SOURCE.parent.rglob("*"))
        if path.is_file()
        and not any(part == "__pycache__" or part.endswith(".egg-info") for part in path.parts)
    ]
    offenders = [
        f"{path.relative_to(SOURCE.parent)}:{number}"
        for path in files
        for number, line in enumerate(path.read_bytes().splitlines(), start=1)
        if b"fmt: skip" in line
    ]
    assert not offenders, "`# fmt: skip` in src (lay the code out for the formatter):\n" + (
        "\n".join(offenders)
    )
