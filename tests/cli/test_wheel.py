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


def build_wheels(tmp_path: Path) -> list[Path]:
    """`rovertrain` and `rovertrain-runtime`, built from a copy of the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "build")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    shutil.copytree(REPO / "packages", source / "packages", ignore=ignore)
    dist = tmp_path / "dist"
    wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    for project in (source, source / "packages" / "rovertrain-runtime"):
        subprocess.run(
            [*wheel, "-w", str(dist), str(project)], check=True, capture_output=True, timeout=300
        )
    (main,) = dist.glob("rovertrain-*.whl")
    (runtime,) = dist.glob("rovertrain_runtime-*.whl")
    return [main, runtime]


def fresh_venv(tmp_path: Path, wheels: list[Path]) -> Path:
    """A new venv with the wheels installed; its dependencies come from this venv's packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    subprocess.run(
        [*install, "-q", *map(str, wheels)], check=True, capture_output=True, timeout=300
    )
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(python_output(python, purelib, cwd=tmp_path))
    # torch, av, numpy…: this venv's site-packages, appended after the venv's own (so the
    # installed wheel, not the checkout, provides rovertrain; .pth files there are not run).
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def python_output(python: Path, code: str, cwd: Path) -> str:
    command = [str(python), "-c", code]
    return subprocess.run(
        command, check=True, capture_output=True, text=True, cwd=cwd
    ).stdout.strip()


def run(venv: Path, *args: str) -> list[dict]:
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(venv)}
    command = [str(venv / "bin" / "rovertrain"), *args]
    completed = subprocess.run(command, capture_output=True, timeout=300, cwd=venv, env=environment)
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    return parse_events(completed.stdout)


def test_installed_wheel_runs_and_ships_its_schemas(tmp_path: Path) -> None:
    venv = fresh_venv(tmp_path, build_wheels(tmp_path))
    for module in ("rovertrain", "rovertrain.runtime", "rovertrain.contracts"):
        code = f"import {module}; print({module}.__file__)"
        where = python_output(venv / "bin" / "python", code, cwd=tmp_path)
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
    # the review page's own files ship in the wheel: it works offline, with no build step
    for asset in (
        "fleet.html",
        "session.html",
        "job.html",
        "review.js",
        "timeline.js",
        "review.css",
    ):
        code = (
            "from importlib import resources; "
            f"print(len(resources.files('rovertrain.review').joinpath('static', {asset!r})"
            ".read_bytes()))"
        )
        assert int(python_output(venv / "bin" / "python", code, cwd=tmp_path)) > 500, asset
    for name in ("job", "session", "command", "model"):
        (shipped,) = run(venv, "schema", name)
        assert shipped["schema"] == json.loads(
            (REPO / "schemas" / f"{name}.schema.json").read_text()
        )
