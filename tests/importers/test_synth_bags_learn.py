"""ROS 2 bags (MCAP: JPEG camera, cmd_vel) of the synthetic world's driver pass the imitation
gate after import.

Slow (minutes on 2 cores): run with `make test-slow`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from importers.imported_learning import gate_summary, import_and_train
from importers.synth_bags import synth_bags

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

BAGS, MINUTES, HELD_OUT = 12, 2.0, 2


def test_imported_synth_bags_pass_the_gate(cli, tmp_path: Path) -> None:
    bags = synth_bags(tmp_path / "bags", count=BAGS, minutes=MINUTES, held_out=HELD_OUT)
    evaluation = import_and_train(cli, tmp_path / "root", "rosbag", bags, HELD_OUT)["evaluation"]
    assert evaluation["status"] == "passed imitation gate", gate_summary(evaluation)
