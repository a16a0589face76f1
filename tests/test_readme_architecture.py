"""README.md's architecture block names every package and module under src/rovertrain, with
its docstring's first sentence, and nothing that is gone: it is generated
(tools/readme_architecture.py, `make docs`), and these tests fail with a diff on drift."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src" / "rovertrain"


def _generator() -> ModuleType:
    path = REPO / "tools" / "readme_architecture.py"
    spec = importlib.util.spec_from_file_location("readme_architecture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
HOW = f"run `{GENERATOR.REGENERATE}` (python tools/readme_architecture.py --write README.md)"


def _readme_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(GENERATOR.MARK) == 1, "README.md needs one architecture:begin marker"
    assert text.count(GENERATOR.END) == 1, "README.md needs one architecture:end marker"
    return str(GENERATOR.current_block(text))


def _named_paths(block: str) -> set[str]:
    """The paths the block names, rebuilt from its indentation: `data/decode.py`, `sim/`."""
    fence = re.search(r"```text\n(.*?)\n```", block, re.S)
    assert fence is not None, "the architecture block holds no ```text fence"
    stack: list[str] = []
    named: set[str] = set()
    for line in fence.group(1).splitlines()[1:]:  # the first line is the root package
        depth = (len(line) - len(line.lstrip(" "))) // len(GENERATOR.INDENT)
        name = line.strip().split("  ", 1)[0]
        del stack[depth - 1 :]
        named.add("".join(stack) + name)
        if name.endswith("/"):
            stack.append(name)
    return named


def _modules_on_disk() -> set[str]:
    named: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        relative = path.relative_to(SOURCE)
        if path.name == "__init__.py":
            if relative.parent != Path("."):
                named.add(f"{relative.parent.as_posix()}/")
        else:
            named.add(relative.as_posix())
    return named


def test_the_block_names_every_package_and_module_and_nothing_else() -> None:
    named = _named_paths(_readme_block())
    on_disk = _modules_on_disk()
    missing = sorted(on_disk - named)
    gone = sorted(named - on_disk)
    assert not missing and not gone, (
        f"README.md's architecture block is stale; {HOW}.\n"
        f"not named in README: {missing}\nnamed in README but not in src/rovertrain: {gone}"
    )


def test_the_block_is_what_the_generator_writes() -> None:
    diff = GENERATOR.drift((REPO / "README.md").read_text(encoding="utf-8"))
    assert not diff, f"README.md's architecture block differs from the tree; {HOW}.\n{diff}"


def test_a_module_summary_is_its_docstrings_first_sentence(tmp_path: Path) -> None:
    module = tmp_path / "widget.py"
    module.write_text('"""Turns wheels: the left one\nfirst.\n\nMore detail."""\n')
    assert GENERATOR.first_sentence(module) == "Turns wheels"
    module.write_text('"""One sentence\nover two lines.\n\nMore."""\n')
    assert GENERATOR.first_sentence(module) == "One sentence over two lines."
    module.write_text("x = 1\n")
    assert GENERATOR.first_sentence(module) == ""


def test_a_new_module_shows_in_the_generated_tree(tmp_path: Path) -> None:
    package = tmp_path / "rovertrain" / "newpkg"
    package.mkdir(parents=True)
    (tmp_path / "rovertrain" / "__init__.py").write_text('"""Root."""\n')
    (package / "__init__.py").write_text('"""The new layer."""\n')
    (package / "thing.py").write_text('"""A thing."""\n')
    tree = GENERATOR.entries(tmp_path / "rovertrain", REPO / "pyproject.toml")
    lines = [entry.line() for entry in tree]
    assert lines == [
        "src/rovertrain/  Root.",
        "  newpkg/  The new layer.",
        "    thing.py  A thing.",
    ]
