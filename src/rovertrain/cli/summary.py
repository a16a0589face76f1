"""A short human summary of a job's event log (used by `make demo`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rovertrain.data.field import FieldFigures
from rovertrain.learn.metrics import VALUE_AGREEMENT
from rovertrain.protocol.eventlog import read_events
from rovertrain.sim.choices import DRIFTED, HAND_OVER, REST
from rovertrain.sim.rollout import back_in_lane_words
from rovertrain.store.layout import Layout

START_WORDS = {HAND_OVER: "a hand-over", REST: "rest", DRIFTED: "a drifted start"}
"""Each start in words, for the line above its controllers."""


def store_line(store: dict[str, Any]) -> str:
    """The `store` event in words."""
    words = [
        f"  store: {store['new']} new, {store['read']} read, {store['unread']} stored and not "
        f"read this time, {store.get('storeBytes', 0) / 2**20:.0f} MiB"
    ]
    if store.get("migrated"):
        words.append("migrated from the earlier layout")
    if store.get("droppedSessions"):
        words.append(f"frames of {store['droppedSessions']} oldest dropped for the budget")
    return ", ".join(words)


def timely_part(figures: dict[str, Any]) -> str:
    """The gate's precision (a fire one tick early counted on time), where reported."""
    timely = figures.get("timelyPrecision")
    return "" if timely is None else f" ({timely:.2f} one tick early counted on time)"


def job_lines(events: list[dict[str, Any]]) -> list[str]:
    """A job's event log in words: sessions, outcome, held-out figures, gate, checkpoint."""
    lines = []
    datasets = [e for e in events if e["kind"] == "dataset"]
    skipped = [e for e in events if e["kind"] == "skipped"]
    held = sum(e.get("partition") == "heldOut" for e in datasets)
    lines.append(f"sessions: {len(datasets)} used ({held} held out), {len(skipped)} skipped")
    for store in (e for e in events if e["kind"] == "store"):
        lines.append(store_line(store))
    supervised = [e["diagnostics"] for e in datasets if "autonomousWindows" in e["diagnostics"]]
    if supervised:
        minutes = sum(d["autonomousWindows"] for d in supervised) / 600
        lines.append(
            f"  {len(supervised)} supervised drives: {minutes:.1f} min driven by a policy (left "
            f"out), {sum(d['takeOvers'] for d in supervised)} take-overs (the person's commands "
            "after them are targets)"
        )
    for event in skipped:
        lines.append(f"  skipped {event['sessionId']}: {event['reason']}")
    last = events[-1] if events else {}
    if last.get("kind") == "error":
        lines.append(f"FAILED ({last['code']}): {last['message']}")
        return lines
    if last.get("kind") != "complete":
        lines.append("the job ended without a terminal event (crashed?)")
        return lines
    if not last["trained"]:
        lines.append(f"not trained: {last.get('reason')}")
        return lines
    evaluation = last["evaluation"]
    lines.append(
        f"trained {last['steps']} steps, {last['examples']} examples, "
        f"mean loss {last['loss']:.4f}, {last['elapsedSeconds']:.0f} s"
    )
    changes = evaluation.get("changes")
    if changes:
        # What the rover does differently is what a person cares about first; re-sends
        # (keepalives) are easy and flatter the overall figures.
        change_mse = changes.get("numericMse")
        held_mse = changes.get("holdLastNumericMse")
        lines.append(
            f"commands that change what the rover does: {changes['events']}, recall "
            f"{changes['recall']:.2f}"
            + (f", value MSE {change_mse:.3f}" if change_mse is not None else "")
            + (f" (repeating the last command: {held_mse:.3f})" if held_mse is not None else "")
        )
    if evaluation.get("visionGain") is not None:
        lines.append(
            f"camera: F1 {evaluation['f1']:.2f} vs {evaluation['blind']['f1']:.2f} with grey "
            f"frames (vision gain {evaluation['visionGain']:+.2f})"
        )
    if "f1" in evaluation:
        lines.append(
            f"held-out: {evaluation['windows']} windows, precision {evaluation['precision']:.2f}"
            f"{timely_part(evaluation)}, recall {evaluation['recall']:.2f}, "
            f"F1 {evaluation['f1']:.2f}, "
            f"stop recall {evaluation['stopRecall']:.2f}, movement recall "
            f"{evaluation['movementRecall']:.2f}, value MSE {evaluation['numericMse']:.3f}"
        )
    agreement = evaluation.get("valueAgreement")
    if agreement is not None:
        held = evaluation.get("holdLastValueAgreement")
        lines.append(
            f"values the policy would send agree with the person's (within "
            f"{VALUE_AGREEMENT:g}) on {agreement:.0%} of the person's commands"
            + (f" (repeating the last command: {held:.0%})" if held is not None else "")
        )
    lines.append(f"imitation gate: {evaluation['status']}")
    for reason in evaluation.get("gateReasons", []):
        lines.append(f"  - {reason}")
    published = last.get("published") or {}
    lines.append(f"checkpoint: {published.get('name')} ({published.get('id')})")
    lines.append(f"promote: {last['promote']} ({last['publication']['reason']})")
    return lines


def replay_lines(event: dict[str, Any]) -> list[str]:
    """The `replayed` summary in words."""
    overall = event["overall"]
    lines = [
        f"replay of {event['sessionId']} ({event['model'].get('name')}, {event['model']['engine']}): "
        f"{event['ticks']} ticks, {overall['usableWindows']} usable, "
        f"{event['realtimeFactor']:.0f}x realtime",
        f"  overall: precision {overall['precision']:.2f}{timely_part(overall)}, "
        f"recall {overall['recall']:.2f}, F1 {overall['f1']:.2f}",
    ]
    for name, row in event["types"].items():
        value = row["meanAbsValueError"]
        lines.append(
            f"  {name:<10} TP {row['truePositive']:>5} FP {row['falsePositive']:>5} "
            f"FN {row['falseNegative']:>5} TN {row['trueNegative']:>6}  precision "
            f"{row['precision']:.2f} recall {row['recall']:.2f}"
            + (f"  mean |value error| {value:.3f}" if value is not None else "")
            + (
                f", values agree {row['valueAgreement']:.0%}"
                if row.get("valueAgreement") is not None
                else ""
            )
        )
    stops = event["stops"]
    if stops.get("matched"):
        lines.append(
            f"  stops: {stops['matched']} of {stops['onsets']} human stops matched within "
            f"±{stops['matchWindowMs']} ms, median offset {stops['medianOffsetMs']:+.0f} ms "
            "(negative: the model stopped first)"
        )
    else:
        lines.append(f"  stops: {stops['onsets']} human stops, none matched")
    own = event.get("ownHistory")
    if own is not None:
        lines.append(own_history_line(own))
    return lines


def own_history_line(own: dict[str, Any]) -> str:
    """`replay --own-history`: where the policy's rover stood against the person's."""
    rests = (
        f"came to rest for {own['restsMatched']} of the person's {own['personRests']} rests "
        f"(within ±{own['matchWindowMs']} ms)"
        if own["personRests"]
        else "the person's rover never came to rest"
    )
    ratio, moved, stood = (
        own["commandRateRatio"],
        own["movedWhilePersonStood"],
        own["stoodWhilePersonMoved"],
    )
    shares = (
        f"; moved while the person's stood on {moved:.1%} of the ticks, stood while it moved "
        f"on {stood:.1%}"
        if moved is not None and stood is not None
        else ""
    )
    return (
        f"  fed its own commands: {rests}, {own['extraRests']} rests of its own"
        + shares
        + (f"; {ratio:.2f}x the person's commands" if ratio is not None else "")
    )


def drive_lines(event: dict[str, Any]) -> list[str]:
    """The `drove` summary in words: the policy next to each baseline, per start."""
    lines = [
        f"closed loop on world {event['world']}, seeds {', '.join(map(str, event['seeds']))}, "
        f"{event['seconds']:.0f} s each:"
    ]
    starts = event.get("starts") or {}
    if len(starts) < 2:
        starts = {"": event}
    for start, figures in starts.items():
        if start:
            lines.append(f" from {START_WORDS.get(start, start)} ({start}):")
        lines.extend(controller_lines(figures))
    return lines


def stop_distance_words(obstacles: dict[str, Any]) -> str:
    """Where the rover stood for its obstacles (absent from events before the figure)."""
    median = obstacles.get("medianStopDistanceMetres")
    if median is None:
        return ""
    short = obstacles.get("stoppedShort", 0)
    return f", stood {median:.1f} m before them" + (f" ({short} short)" if short else "")


def controller_lines(figures: dict[str, Any]) -> list[str]:
    """One start's controllers and the policy's margins over the baselines, in words."""
    lines = []
    for name, row in figures["controllers"].items():
        obstacles = row["obstacles"]
        rate = obstacles["stopRate"]
        lines.append(
            f"  {name:<8} in lane {row['inLaneFraction']:6.1%}, |offset| "
            f"{row['meanAbsOffset']:.2f}, {row['distanceMetres']:.0f} m, obstacles "
            f"{obstacles['met']} met, {obstacles['stoppedBeforeContact']} stopped before "
            f"contact"
            + ("" if rate is None else f" ({rate:.0%})")
            + f", {obstacles['collided']} hit"
            + stop_distance_words(obstacles)
            + back_in_lane_words(row.get("backInLaneSeconds", 0.0))
        )
        if "field" in row:
            lines.append("  " + FieldFigures.of_event(row["field"]).words())
    for name, gap in figures["margins"].items():
        stops = gap["stopRate"]
        lines.append(
            f"  policy vs {name}: in lane {gap['inLaneFraction']:+.1%}"
            + ("" if stops is None else f", stops {stops:+.0%}")
        )
    return lines


def main(argv: list[str]) -> int:
    if argv[1] == "--drive":
        events = list(read_events(Path(argv[2])))
        sys.stderr.write("\n" + "\n".join(drive_lines(events[-1])) + "\n")
        return 0
    if argv[1] in ("--checkpoint", "--held-out", "--replay"):
        events = list(read_events(Path(argv[2])))
        if argv[1] == "--checkpoint":
            started = next(e for e in events if e["kind"] == "started")
            published = events[-1]["published"]["id"]
            print(Layout(Path(started["root"])).checkpoint(published))
        elif argv[1] == "--held-out":
            print(next(e["sessionId"] for e in events if e.get("partition") == "heldOut"))
        else:
            sys.stderr.write("\n" + "\n".join(replay_lines(events[-1])) + "\n")
        return 0
    if argv[1] == "--job-dir":
        events = list(read_events(Path(argv[2])))
        started = next(e for e in events if e["kind"] == "started")
        print(Layout(Path(started["root"])).job(started["jobId"]).path)
        return 0
    events = list(read_events(Path(argv[1])))
    sys.stderr.write("\n" + "\n".join(job_lines(events)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
