"""The wheel works away from the checkout: built, installed (not editable), run, schemas inside."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from jsonschema import Draft202012Validator

from conftest import REPO, parse_events


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = dist.glob("rovertrain-*.whl")
    return wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new venv with the wheel installed; its dependencies come from this venv's packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    # torch, av, numpy…: this venv's site-packages, appended after the venv's own (so the
    # installed wheel, not the checkout, provides rovertrain; .pth files there are not run).
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def run(venv: Path, *args: str) -> list[dict]:
    completed = subprocess.run(
        [str(venv / "bin" / "rovertrain"), *args], capture_output=True, timeout=300,
        cwd=venv, env={"PATH": "/usr/bin:/bin", "HOME": str(venv)},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    return parse_events(completed.stdout)


def test_installed_wheel_runs_and_ships_its_schemas(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path, wheel)
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import rovertrain; print(rovertrain.__file__)"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert where.startswith(str(venv)), where
    (deps,) = run(venv, "check-deps")
    assert deps["selfTest"]["passed"] is True
    root = tmp_path / "root"
    run(venv, "synth", "--out", str(root), "--sessions", "2", "--minutes", "0.1", "--seed", "1")
    inspected = run(venv, "inspect", str(root))
    (packaged,) = run(venv, "schema", "events")
    validator = Draft202012Validator(packaged["schema"])
    for event in inspected:
        assert not list(validator.iter_errors(event)), event
    assert inspected[-1]["kind"] == "inspected" and inspected[-1]["sessions"] >= 1
    for name in ("job", "session", "command", "model"):
        (shipped,) = run(venv, "schema", name)
        assert shipped["schema"] == json.loads(
            (REPO / "schemas" / f"{name}.schema.json").read_text()
        )
