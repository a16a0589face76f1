from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, cli_env, parse_events

COMMANDS = [
    "run",
    "check-deps",
    "validate-job",
    "synth",
    "inspect",
    "models",
    "events",
    "report",
    "export",
    "drive",
]


@pytest.mark.parametrize("args", [[], *([name] for name in COMMANDS)])
def test_help_never_imports_heavy_modules(args: list[str]) -> None:
    program = (
        "import sys\n"
        "from rovertrain.cli import cli\n"
        "try:\n"
        f"    cli({[*args, '--help']!r}, prog_name='rovertrain')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "heavy = sorted({'torch', 'av', 'numpy'} & set(sys.modules))\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=60, env=cli_env()
    )
    assert completed.returncode == 0, completed.stderr
    assert b"HEAVY=\n" in completed.stderr, completed.stderr[-300:]
    assert b"Usage:" in completed.stdout


def test_console_script_and_module_agree() -> None:
    script = REPO / ".venv" / "bin" / "rovertrain"
    via_module = subprocess.run([sys.executable, "-m", "rovertrain", "--version"],
                                capture_output=True, timeout=60)  # fmt: skip
    assert via_module.returncode == 0 and b"0.1.0" in via_module.stdout
    if script.exists():
        via_script = subprocess.run([script, "--version"], capture_output=True, timeout=60)
        assert via_script.stdout == via_module.stdout


def test_check_deps_prints_one_dependencies_event(cli, tmp_path) -> None:
    before = set(tmp_path.iterdir())
    result = cli("check-deps")
    assert result.code == 0, result.stderr
    (event,) = result.events
    assert event["kind"] == "dependencies"
    assert event["selfTest"]["passed"] and event["selfTest"]["frames"] == 6
    assert event["parameters"] > 10_000 and event["specification"]["version"] >= 1
    assert "libavcodec" in event["ffmpeg"] and event["torch"].startswith("2.")
    assert set(tmp_path.iterdir()) == before


def test_usage_error_exits_2_with_no_stdout() -> None:
    completed = subprocess.run([sys.executable, "-m", "rovertrain", "run"],
                               capture_output=True, timeout=60)  # fmt: skip
    assert completed.returncode == 2 and completed.stdout == b""
    assert b"--job" in completed.stderr


def test_invalid_job_is_one_error_event_exit_2(cli, tmp_path) -> None:
    path = tmp_path / "job.json"
    path.write_text('{"root": "/x", "sessions": ["../up"]}')
    result = cli("run", "--job", str(path))
    assert result.code == 2
    assert result.kinds() == ["error"]
    assert result.last()["code"] == "invalid_job" and result.last()["pointer"] == "/sessions/0"


def test_job_from_stdin(cli) -> None:
    result = cli("validate-job", "-", stdin=b'{"root": "/nonexistent-root", "sessions": []}')
    assert result.code == 1 and result.last()["code"] == "root_unavailable"


def test_validate_job_reports_missing_sessions_and_accepts_good_ones(
    cli, synth_data, tmp_path
) -> None:
    job = json.loads((synth_data / "job.json").read_text())
    good = tmp_path / "good.json"
    good.write_text(json.dumps(job))
    result = cli("validate-job", str(good))
    assert result.code == 0 and result.kinds() == ["validated"]
    assert result.last()["sessions"] == len(job["sessions"])
    job["sessions"].append("missing-session")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(job))
    result = cli("validate-job", str(bad))
    assert result.code == 1 and result.last()["code"] == "missing_sessions"
    assert "missing-session" in result.last()["message"]


def test_a_job_without_sessions_means_every_session_and_offline_needs_no_root(
    cli, synth_data, tmp_path
) -> None:
    job = json.loads((synth_data / "job.json").read_text())
    listed = len(job.pop("sessions"))
    template = tmp_path / "all.json"
    template.write_text(json.dumps(job))
    result = cli("validate-job", str(template))
    assert result.code == 0 and result.last()["sessions"] == listed
    assert result.last()["allSessions"] is False  # resolved against the root
    offline = tmp_path / "offline.json"
    offline.write_text(json.dumps({**job, "root": "/nowhere/at/all"}))
    result = cli("validate-job", "--offline", str(offline))
    assert result.code == 0 and result.last()["offline"] is True
    assert result.last()["allSessions"] is True and result.last()["sessions"] == 0
    offline.write_text(json.dumps({**job, "root": "/nowhere", "config": {"threads": 0}}))
    result = cli("validate-job", "--offline", str(offline))
    assert result.code == 2 and result.last()["pointer"] == "/config/threads"


def test_other_systems_get_a_clear_error_at_start() -> None:
    program = (
        "import sys\n"
        "sys.platform = 'darwin'\n"
        "from rovertrain.cli import main\n"
        "sys.argv = ['rovertrain', 'check-deps']\n"
        "main()\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=60, cwd=REPO
    )
    events = parse_events(completed.stdout)
    assert completed.returncode == 1 and [e["kind"] for e in events] == ["error"]
    assert events[0]["code"] == "unsupported_platform" and "Linux only" in events[0]["message"]


def test_check_deps_names_a_broken_dependency() -> None:
    program = (
        "import sys\n"
        "sys.modules['av'] = None  # simulate a broken PyAV install\n"
        "from rovertrain.cli import main\n"
        "sys.argv = ['rovertrain', 'check-deps']\n"
        "main()\n"
    )
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    from conftest import parse_events

    (event,) = parse_events(completed.stdout)
    assert completed.returncode == 1
    assert event["kind"] == "error" and event["code"] == "missing_dependency"
    assert "av" in event["message"]
