"""The `replayed` event's figures as records: their JSON is the event's fields, in order."""

from __future__ import annotations

import numpy as np

from rovertrain.contracts.command_schema import SLOTS, VALUES, initial_schema
from rovertrain.data.recording import Command
from rovertrain.deploy.replay_figures import StopTiming, replay_figures, stop_timing
from rovertrain.deploy.replay_trace import HumanLabels, ReplayTrace


def test_stop_timing_without_anything_to_time_has_no_missed_count() -> None:
    assert StopTiming().to_json() == {"onsets": 0, "matched": 0, "matchWindowMs": 2000}
    assert StopTiming(onsets=2, offsets=()).to_json() == {
        "onsets": 2,
        "matched": 0,
        "missed": 2,
        "matchWindowMs": 2000,
    }


def test_stop_timing_matches_the_nearest_predicted_stop_within_two_seconds() -> None:
    ticks = np.arange(0, 6000, 100)
    human = np.zeros((len(ticks), SLOTS), dtype=bool)
    model = np.zeros((len(ticks), SLOTS), dtype=bool)
    human[[10, 11, 40], 0] = True  # onsets at 1.0 s and 4.0 s (stop is slot 0)
    model[[8, 59], 0] = True  # 0.2 s early for the first; 1.9 s late for the second
    timing = stop_timing(initial_schema(), ticks, model, human)
    assert timing.onsets == 2 and timing.offsets == (-200.0, 1900.0)
    fields = timing.to_json()
    assert list(fields) == [
        "onsets",
        "matched",
        "missed",
        "matchWindowMs",
        "medianOffsetMs",
        "meanOffsetMs",
        "earlyStops",
        "lateStops",
    ]
    assert (fields["earlyStops"], fields["lateStops"], fields["medianOffsetMs"]) == (1, 1, 850.0)


def test_the_figures_json_has_the_replayed_fields_and_camera_only_with_a_sighted_run() -> None:
    schema = initial_schema()
    commands = [Command(250.0, "drive", {"speed": 0.5, "turn": 0.0}), Command(650.0, "stop")]
    human = HumanLabels(commands, schema)
    trace = ReplayTrace()
    for tick in range(0, 1000, 100):
        probability = np.full(SLOTS, 0.9 if tick == 200 else 0.1)
        trace.add(tick, probability, np.zeros((SLOTS, VALUES), np.float32), True, human.row(tick))
    figures = replay_figures(trace.arrays(), human, schema, threshold=0.5)
    fields = figures.to_json()
    assert list(fields) == ["types", "overall", "stops"]
    types = fields["types"]
    assert isinstance(types, dict) and list(types) == ["stop", "drive"]
    stop, drive = figures.figures.types["stop"], figures.figures.types["drive"]
    # The model fires every type at 0.2 s only: the drive sent then, not the stop at 0.65 s.
    assert (drive.true_positive, drive.false_positive, drive.false_negative) == (1, 0, 0)
    assert (stop.true_positive, stop.false_positive, stop.false_negative) == (0, 1, 1)
    assert drive.mean_abs_value_error == 0.25  # |0 - 0.5| and |0 - 0| over the two values
    assert figures.figures.overall.usable_windows == 10
    trace.sighted = [np.full(SLOTS, 0.1)] * 10
    camera = replay_figures(trace.arrays(), human, schema, threshold=0.5).to_json()["camera"]
    assert camera == {
        "sightedF1": 0.0,
        "blindF1": figures.figures.overall.f1,
        "f1FromCamera": -figures.figures.overall.f1,
        "perType": {
            "stop": {"sightedF1": 0.0, "blindF1": 0.0},
            "drive": {"sightedF1": 0.0, "blindF1": drive.score.f1},
        },
    }


def test_replay_scores_a_stop_fired_one_tick_before_the_persons_on_time() -> None:
    """Precision as the gate judges it: the stop at 0.5 s precedes the person's at 0.65 s."""
    schema = initial_schema()
    commands = [Command(250.0, "drive", {"speed": 0.5, "turn": 0.0}), Command(650.0, "stop")]
    human = HumanLabels(commands, schema)
    trace = ReplayTrace()
    for tick in range(0, 1000, 100):
        probability = np.full(SLOTS, 0.1)
        probability[0] = 0.9 if tick in (500, 600) else 0.1  # the stop, early and on time
        probability[1] = 0.9 if tick == 200 else 0.1  # the drive, on time
        trace.add(tick, probability, np.zeros((SLOTS, VALUES), np.float32), True, human.row(tick))
    overall = replay_figures(trace.arrays(), human, schema, threshold=0.5).to_json()["overall"]
    assert isinstance(overall, dict)
    assert overall["precision"] == 2 / 3 and overall["timelyPrecision"] == 1.0
