"""`rovertrain import … --help` stays instant: no torch, av, numpy or pyarrow imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import cli_env


@pytest.mark.parametrize("args", [["import"], ["import", "donkey"], ["import", "lerobot"]])
def test_import_help_never_imports_heavy_modules(args: list[str]) -> None:
    program = (
        "import sys\n"
        "from rovertrain.cli import cli\n"
        "try:\n"
        f"    cli({[*args, '--help']!r}, prog_name='rovertrain')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "heavy = sorted({'torch', 'av', 'numpy', 'pyarrow'} & set(sys.modules))\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=60, env=cli_env()
    )
    assert completed.returncode == 0, completed.stderr
    assert b"HEAVY=\n" in completed.stderr, completed.stderr[-300:]
    assert b"Usage:" in completed.stdout
