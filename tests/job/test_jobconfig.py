from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rovertrain.contracts.errors import InvalidJob
from rovertrain.contracts.settings import knobs
from rovertrain.job.config import Config, load_job_text, parse_job
from rovertrain.job.schema import job_schema

REPO = Path(__file__).resolve().parents[2]
GOOD = {"root": "/data", "sessions": ["a", "b-1"], "actionThreshold": 0.5, "config": {}}


def bad(pointer: str, text: str) -> None:
    with pytest.raises(InvalidJob) as caught:
        load_job_text(text)
    assert caught.value.pointer == pointer, caught.value.message
    assert caught.value.code == "invalid_job"


def with_(**changes) -> str:
    return json.dumps({**GOOD, **changes})


def test_sessions_may_be_absent_but_not_null_or_wrong() -> None:
    assert load_job_text('{"root": "/x"}').sessions is None
    assert load_job_text('{"root": "/x", "sessions": []}').sessions == ()
    with pytest.raises(InvalidJob) as raised:
        load_job_text('{"root": "/x", "sessions": "a"}')
    assert raised.value.pointer == "/sessions"


def test_defaults_are_documented_and_applied() -> None:
    job = load_job_text(json.dumps(GOOD))
    assert job.config == Config()
    declared = {k.name: k.spec.default for k in knobs(Config)}
    assert job.config.to_json() == declared and declared["threads"] == 2
    assert job.config.execution.threads == 2 and job.config.optimisation.batchSize == 64
    assert job.gate.minPrecision == 0.5 and job.gate.maxNumericMse == 0.1
    assert job.seed == 0 and job.jobId is None
    assert job.steeringDeadband == 0.1
    assert load_job_text(with_(steeringDeadband=0)).steeringDeadband == 0.0


def test_seed_fields_are_accepted_unchanged() -> None:
    config = {
        "threads": 2, "maxJobSeconds": 60, "maxSamples": 100, "minimumSamples": 10,
        "batchSize": 8, "passesPerJob": 1, "maxStepsPerJob": 5, "checkpointEverySteps": 1,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0,
    }  # fmt: skip
    job = load_job_text(with_(config=config))
    assert job.config.optimisation.maxStepsPerJob == 5 and job.config.budget.maxJobSeconds == 60
    assert job.config.to_json() == {**Config().to_json(), **config}


@pytest.mark.parametrize(
    ("pointer", "text"),
    [
        ("", "not json"),
        ("", '{"root": "/x", "sessions": [], "config": {"threads": NaN}}'),
        ("", '{"root": "/x", "sessions": [], "config": {"maxJobSeconds": Infinity}}'),
        ("", '{"root": "/x", "sessions": [], "config": {"maxJobSeconds": 1e999}}'),
        ("", '{"root": "/x", "root": "/y", "sessions": []}'),
        ("", "[]"),
        ("/surprise", with_(surprise=1)),
        ("/root", with_(root=3)),
        ("/root", with_(root="")),
        ("/sessions", with_(sessions="a")),
        ("/sessions/0", with_(sessions=[".."])),
        ("/sessions/0", with_(sessions=["."])),
        ("/sessions/1", with_(sessions=["ok", "../etc"])),
        ("/sessions/0", with_(sessions=["/abs"])),
        ("/sessions/0", with_(sessions=["a\u0000b"])),
        ("/sessions/0", with_(sessions=["s1\n"])),
        ("/jobId", with_(jobId="nightly\n")),
        ("/sessions/1", with_(sessions=["a", "a"])),
        ("/config/threads", with_(config={"threads": 0})),
        ("/config/threads", with_(config={"threads": 1.5})),
        ("/config/threads", with_(config={"threads": True})),
        ("/config/batchSize", with_(config={"batchSize": "64"})),
        ("/config/maxJobSeconds", with_(config={"maxJobSeconds": 0})),
        ("/config/typo", with_(config={"typo": 1})),
        ("/config", with_(config=None)),
        ("/config/precision", with_(config={"precision": "fp16"})),
        ("/gate/minPrecision", with_(gate={"minPrecision": 2})),
        ("/actionThreshold", with_(actionThreshold=1)),
        ("/actionThreshold", with_(actionThreshold=0)),
        ("/steeringDeadband", with_(steeringDeadband=-0.1)),
        ("/steeringDeadband", with_(steeringDeadband="0.1")),
        ("/steeringDeadband", with_(steeringDeadband=3)),
        ("/jobId", with_(jobId="a/b")),
        ("/seed", with_(seed=-1)),
    ],
)
def test_bad_jobs_name_the_field(pointer: str, text: str) -> None:
    bad(pointer, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
fields = st.sampled_from(
    [
        "root",
        "sessions",
        "config",
        "gate",
        "seed",
        "jobId",
        "x",
        "actionThreshold",
        "steeringDeadband",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(fields, json_values, max_size=6) | json_values)
def test_fuzz_every_input_loads_or_is_one_invalid_job(document) -> None:
    try:
        parse_job(document)
    except InvalidJob as error:
        assert error.code == "invalid_job" and error.message


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_text_never_raises_anything_else(text: str) -> None:
    with contextlib.suppress(InvalidJob):
        load_job_text(text)


def test_job_schema_file_matches_the_code() -> None:
    on_disk = json.loads((REPO / "schemas" / "job.schema.json").read_text())
    assert on_disk == json.loads(json.dumps(job_schema()))


def test_example_jobs_are_valid() -> None:
    paths = sorted((REPO / "jobs").glob("*.json"))
    assert paths
    for path in paths:
        load_job_text(path.read_text())


def test_a_job_that_is_not_json_says_so_once() -> None:
    with pytest.raises(InvalidJob) as caught:
        load_job_text('{"root": "/data",\n}')
    assert caught.value.pointer == ""
    assert str(caught.value) == (
        "/: not valid job JSON (Expecting property name enclosed in double quotes: "
        "line 2 column 1 (char 18))"
    )
    with pytest.raises(InvalidJob, match=r"^/: not valid job JSON \(duplicate key 'root'\)$"):
        load_job_text('{"root": "/a", "root": "/b"}')
