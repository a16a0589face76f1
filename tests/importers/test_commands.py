"""Which commands a stream of sampled controls becomes (pure)."""

from __future__ import annotations

from rovertrain.importers.commands import (
    CommandRules,
    ControlSample,
    command_line,
    extract_commands,
    keepalive_for,
    record_cadence_ms,
)

RULES = CommandRules(tolerance=0.05, keepalive_ms=475, motion=("throttle",))


def samples(rows: list[tuple[float, float, float]]) -> list[ControlSample]:
    return [ControlSample(t, {"angle": angle, "throttle": throttle}) for t, angle, throttle in rows]


def kinds(
    rows: list[tuple[float, float, float]], rules: CommandRules = RULES
) -> list[tuple[float, str]]:
    return [(command.t, command.type) for command in extract_commands(samples(rows), rules)]


def test_at_rest_from_the_start_sends_nothing_and_steering_a_parked_car_sends_nothing() -> None:
    assert kinds([(0, 0.0, 0.0), (50, 0.5, 0.0), (100, -0.5, 0.005), (900, 0.1, 0.0)]) == []


def test_moving_sends_drive_then_only_changes_beyond_the_tolerance() -> None:
    rows = [(0, 0.0, 0.5), (50, 0.04, 0.5), (100, 0.06, 0.5), (150, 0.06, 0.54), (200, 0.2, 0.5)]
    commands = extract_commands(samples(rows), RULES)
    assert [command.t for command in commands] == [0, 100, 200]
    assert commands[1].values == {"angle": 0.06, "throttle": 0.5}


def test_keepalive_while_the_controls_hold_still() -> None:
    rows = [(t, 0.1, 0.5) for t in range(0, 1600, 50)]
    assert [t for t, _ in kinds(rows)] == [0, 500, 1000, 1500]


def test_a_throttle_held_at_zero_holds_the_stop_at_the_keepalive() -> None:
    held = [(t, 0.0, 0.0) for t in range(50, 2050, 50)]  # 2 s at rest: four keepalives long
    rows = [(0, 0.0, 0.5), *held, (2050, 0.0, 0.4), (2100, 0.3, 0.0), (2600, 0.0, 0.0)]
    assert kinds(rows) == [
        (0, "drive"),
        (50, "stop"),
        (550, "stop"),
        (1050, "stop"),
        (1550, "stop"),
        (2050, "drive"),
        (2100, "stop"),
        (2600, "stop"),
    ]
    once = CommandRules(
        tolerance=0.05, keepalive_ms=475, motion=("throttle",), stop_keepalive=False
    )
    assert kinds(rows, once) == [(0, "drive"), (50, "stop"), (2050, "drive"), (2100, "stop")]


def test_reversing_is_moving_and_values_are_clipped() -> None:
    commands = extract_commands(samples([(0, 1.7, -0.6)]), RULES)
    assert commands[0].type == "drive"
    assert commands[0].values == {"angle": 1.0, "throttle": -0.6}


def test_motion_defaults_to_every_value() -> None:
    rules = CommandRules(motion=())
    turning_in_place = [ControlSample(0, {"speed": 0.0, "turn": 0.5})]
    assert [c.type for c in extract_commands(turning_in_place, rules)] == ["drive"]


def test_the_drive_type_can_be_renamed() -> None:
    rules = CommandRules(motion=(), drive="move")
    assert extract_commands([ControlSample(0, {"v": 0.5})], rules)[0].type == "move"


def test_keepalive_is_a_whole_number_of_record_periods() -> None:
    twenty_hz = [i * 50.0 for i in range(40)]
    assert record_cadence_ms(twenty_hz) == 50.0
    keepalive = keepalive_for(twenty_hz, 500)
    # The 10th record after a send (500 ms later) is the first at or past the keepalive.
    assert 450 < keepalive <= 500
    thirty_hz = [i * 1000 / 30 for i in range(40)]
    assert 1000 / 30 * 14 < keepalive_for(thirty_hz, 500) <= 500  # the 15th record
    every_45 = [i * 45.0 for i in range(40)]
    assert 11 * 45 < keepalive_for(every_45, 500) <= 12 * 45  # the 12th record, 540 ms
    assert keepalive_for([0.0, 2000.0], 500) == 2000.0  # slower than the keepalive: every record
    assert keepalive_for([], 500) == 500


def test_command_lines_follow_the_format() -> None:
    commands = extract_commands(samples([(12.3456, 0.1, 0.5), (20, 0.1, 0.0)]), RULES)
    assert len(commands) == 2
    assert command_line(commands[0]) == {
        "t": 12.346,
        "type": "drive",
        "values": {"angle": 0.1, "throttle": 0.5},
    }
    assert command_line(commands[1]) == {"t": 20, "type": "stop"}
