"""The job's knobs are declared once; the README's tables and the schema are generated."""

from __future__ import annotations

import json
from pathlib import Path

from rovertrain.contracts.decision import DecisionRules
from rovertrain.contracts.settings import knobs, names
from rovertrain.gate.settings import Gate
from rovertrain.job.config import Config
from rovertrain.job.schema import (
    README_END,
    README_MARK,
    job_schema,
    readme_block,
    with_readme_block,
)
from rovertrain.job.settings import Seeding

REPO = Path(__file__).resolve().parents[2]


def test_the_readme_tables_are_the_generated_ones() -> None:
    text = (REPO / "README.md").read_text()
    assert text.count(README_MARK) == 1
    assert text.count(README_END) == 1
    assert with_readme_block(text) == text, (
        "README.md's settings tables differ from the knobs' declarations; run "
        "`python -m rovertrain.job.schema --write-readme README.md`"
    )


def test_every_knob_has_one_row() -> None:
    block = readme_block()
    for cls in (DecisionRules, Seeding, Config, Gate):
        for name in names(cls):
            assert block.count(f"| `{name}` |") == 1, name


def test_the_schema_file_is_byte_for_byte_the_generated_one() -> None:
    on_disk = (REPO / "schemas" / "job.schema.json").read_text()
    assert on_disk == json.dumps(job_schema(), indent=2) + "\n", (
        "run `python -m rovertrain.job.schema > schemas/job.schema.json`"
    )


def test_config_is_one_flat_object_in_the_files_order() -> None:
    flat = Config().to_json()
    assert list(flat) == list(Config.KNOB_ORDER) and len(flat) == 41
    assert {k.name for k in knobs(Config)} == set(Config.KNOB_ORDER)
    assert list(Gate().to_json()) == list(names(Gate))
