"""The world registry: every world answers for itself; the commands name none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rovertrain.contracts.errors import RovertrainError
from rovertrain.sim.registry import (
    WORLDS,
    lookup,
    seconds_help,
    supervised_names,
    world_help,
)
from rovertrain.sim.world_protocol import SynthRequest

SRC = Path(__file__).resolve().parents[2] / "src" / "rovertrain"


def test_every_world_is_named_in_the_help_with_its_own_default_length() -> None:
    assert list(WORLDS) == ["road", "warehouse", "corridor", "carracing"]
    for world in WORLDS.values():
        assert f"{world.name}: {world.summary}" in world_help()
    assert seconds_help() == "Simulated seconds per rollout [default: 120; carracing: 30]."
    assert supervised_names() == ("road", "warehouse", "corridor")


def test_an_unknown_world_is_a_usage_error_that_lists_the_known_ones() -> None:
    with pytest.raises(RovertrainError) as raised:
        lookup("moon")
    assert raised.value.code == "usage" and "road, warehouse, corridor, carracing" in str(
        raised.value
    )


def test_carracing_refuses_what_it_does_not_offer_before_any_work() -> None:
    carracing = lookup("carracing")
    assert carracing.supervision is None
    with pytest.raises(RovertrainError, match="--shuffle-commands"):
        carracing.synthesize(SynthRequest("/nonexistent/out", 1, 0.1, 0, shuffle_commands=True))
    with pytest.raises(RovertrainError, match="drive \\{turn, throttle\\}"):
        slot = {"type": "drive", "role": "movement", "values": ["speed", "turn"]}
        carracing.check_policy([slot], 30.0)  # type: ignore[list-item]


def test_the_rover_worlds_record_their_own_roles() -> None:
    assert lookup("warehouse").roles() == {"stop": "stop", "drive": "movement", "horn": "other"}
    assert lookup("carracing").roles() == {"drive": "movement"}


def test_importing_the_registry_imports_no_simulator() -> None:
    code = (
        "import sys, rovertrain.sim.registry\n"
        "print(sorted({'numpy', 'gymnasium', 'av'} & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_commands_name_no_world() -> None:
    for package in ("cli", "deploy"):
        for module in (SRC / package).glob("*.py"):
            text = module.read_text().lower()
            assert "carracing" not in text and "warehouse" not in text, module
