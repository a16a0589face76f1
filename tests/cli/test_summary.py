"""The human summaries `make demo` prints (stderr)."""

from __future__ import annotations

from rovertrain.cli.summary import drive_lines, job_lines, own_history_line


def _controller(in_lane: float, met: int, stopped: int) -> dict:
    return {
        "inLaneFraction": in_lane,
        "meanAbsOffset": 0.3,
        "distanceMetres": 120.0,
        "obstacles": {
            "met": met,
            "stoppedBeforeContact": stopped,
            "collided": met - stopped,
            "stopRate": stopped / met if met else None,
        },
    }


def test_drive_summary_puts_the_policy_next_to_each_baseline() -> None:
    event = {
        "world": "road",
        "seeds": [0, 1],
        "seconds": 120.0,
        "controllers": {"policy": _controller(0.95, 10, 9), "copycat": _controller(0.2, 10, 0)},
        "margins": {"copycat": {"inLaneFraction": 0.75, "stopRate": 0.9}},
    }
    lines = drive_lines(event)
    assert lines[0].startswith("closed loop on world road, seeds 0, 1, 120 s")
    assert "policy   in lane  95.0%" in lines[1] and "9 stopped before contact (90%)" in lines[1]
    assert lines[-1] == "  policy vs copycat: in lane +75.0%, stops +90%"


def test_drive_summary_names_each_start_and_how_long_a_drifted_rover_took_to_get_back() -> None:
    rest = {"controllers": {"policy": _controller(0.95, 10, 9)}, "margins": {}}
    back = {**_controller(0.9, 10, 9), "backInLaneSeconds": 2.5}
    never = {**_controller(0.0, 0, 0), "backInLaneSeconds": None}
    drifted = {"controllers": {"policy": back, "copycat": never}, "margins": {}}
    event = {
        "world": "road",
        "seeds": [0],
        "seconds": 60.0,
        **rest,
        "starts": {"rest": rest, "drifted": drifted},
    }
    lines = drive_lines(event)
    assert lines[1] == " from rest (rest):" and "back in the lane" not in lines[2]
    assert lines[3] == " from a drifted start (drifted):"
    assert lines[4].endswith(", back in the lane after 2.5 s")
    assert lines[5].endswith(", never back in the lane")


def test_job_summary_reads_the_changes_and_the_camera_first() -> None:
    evaluation = {
        "status": "passed imitation gate",
        "windows": 900,
        "precision": 0.7,
        "timelyPrecision": 0.85,
        "recall": 0.8,
        "f1": 0.75,
        "stopRecall": 0.9,
        "movementRecall": 0.8,
        "numericMse": 0.01,
        "visionGain": 0.3,
        "blind": {"f1": 0.45},
        "changes": {"events": 40, "recall": 0.6, "numericMse": 0.02, "holdLastNumericMse": 0.09},
    }
    complete = {
        "kind": "complete",
        "trained": True,
        "steps": 100,
        "examples": 6400,
        "loss": 0.2,
        "elapsedSeconds": 60,
        "evaluation": evaluation,
        "published": {"name": "n", "id": "i"},
        "promote": True,
        "publication": {"reason": "Latest updated"},
    }
    lines = job_lines([complete])
    assert lines[2] == (
        "commands that change what the rover does: 40, recall 0.60, value MSE 0.020 "
        "(repeating the last command: 0.090)"
    )
    assert lines[3] == "camera: F1 0.75 vs 0.45 with grey frames (vision gain +0.30)"
    assert lines[4].startswith(
        "held-out: 900 windows, precision 0.70 (0.85 one tick early counted on time), recall"
    )
    del evaluation["timelyPrecision"]  # a job from before the gate judged it
    assert "precision 0.70, recall" in job_lines([complete])[4]


def test_the_store_in_words() -> None:
    store = {"kind": "store", "sessions": 900, "new": 2, "read": 80, "unread": 820,
             "storeBytes": 3 * 2**30, "droppedSessions": 5, "migrated": False}  # fmt: skip
    lines = job_lines([store])
    assert lines[1] == (
        "  store: 2 new, 80 read, 820 stored and not read this time, 3072 MiB, frames of 5 "
        "oldest dropped for the budget"
    )


def test_own_history_line_says_where_the_policys_rover_stood() -> None:
    own = {
        "personRests": 3,
        "restsMatched": 0,
        "extraRests": 1,
        "matchWindowMs": 2000,
        "movedWhilePersonStood": 0.075,
        "stoodWhilePersonMoved": 0.021,
        "commandRateRatio": 1.4,
    }
    line = own_history_line(own)
    assert "came to rest for 0 of the person's 3 rests" in line
    assert "moved while the person's stood on 7.5% of the ticks" in line
    assert "1.40x the person's commands" in line
    never = own_history_line({**own, "personRests": 0, "commandRateRatio": None})
    assert "the person's rover never came to rest" in never and "x the person's" not in never
    empty = {**own, "movedWhilePersonStood": None, "stoodWhilePersonMoved": None}
    assert "ticks" not in own_history_line(empty)  # a recording with no tick to judge
