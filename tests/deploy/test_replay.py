"""`rovertrain replay`: the streaming runtime over a recording agrees with the job's evaluation."""

from __future__ import annotations

from pathlib import Path

from conftest import write_job

# Agreement needs trained weights, not good ones: small batches and no learning probe.
FAST = {"passesPerJob": 10, "maxStepsPerJob": 20, "minimumSamples": 50, "maxSamples": 20000,
        "minimumDrivingMinutes": 0, "newDrivingMinutesPerModel": 0, "checkpointEverySteps": 0,
        "probeMaxSeconds": 0, "batchSize": 16}  # fmt: skip


def test_held_out_replays_agree_with_the_jobs_batch_evaluation(cli, synth_copy: Path) -> None:
    result = cli("run", "--job", str(write_job(synth_copy, **FAST)))
    assert result.code == 0, result.stderr
    complete = result.last()
    evaluation = complete["evaluation"]
    held_out = [e["sessionId"] for e in result.of("dataset") if e["partition"] == "heldOut"]
    assert held_out
    checkpoint = synth_copy / "training" / "checkpoints" / complete["published"]["id"]
    torch_replays = {}
    fed_by_person = {}
    windows = 0
    counts = {
        slot["type"]: {"events": 0, "predicted": 0, "tp": 0} for slot in evaluation["perSlot"]
    }
    for session_id in held_out:
        replay = cli("replay", str(checkpoint), str(synth_copy), session_id)
        assert replay.code == 0, replay.stderr
        summary = replay.last()
        assert summary["kind"] == "replayed" and summary["model"]["engine"] == "torch"
        predictions = replay.of("prediction")
        assert len(predictions) == summary["ticks"] > 0
        assert [e["t"] for e in predictions] == sorted(e["t"] for e in predictions)
        torch_replays[session_id] = summary
        fed_by_person[session_id] = predictions
        windows += summary["overall"]["usableWindows"]
        for name, row in summary["types"].items():
            counts[name]["events"] += row["truePositive"] + row["falseNegative"]
            counts[name]["predicted"] += row["truePositive"] + row["falsePositive"]
            counts[name]["tp"] += row["truePositive"]
    assert windows == evaluation["windows"]
    for slot in evaluation["perSlot"]:
        mine = counts[slot["type"]]
        assert mine["events"] == slot["events"], slot["type"]
        # Batch and stream run the same weights at different batch sizes: a probability a
        # hair from the threshold may land on the other side, nothing more.
        assert abs(mine["predicted"] - slot["predicted"]) <= 1, (slot, mine)
        recall = mine["tp"] / mine["events"] if mine["events"] else 0.0
        assert abs(recall - slot["recall"]) <= 1.0 / max(1, mine["events"]), (slot, mine)

    # --own-history: the same frames, the policy's own commands fed back as its history.
    session_id = held_out[0]
    own = cli("replay", str(checkpoint), str(synth_copy), session_id, "--own-history")
    assert own.code == 0, own.stderr
    summary, figures = own.last(), own.last()["ownHistory"]
    assert figures["ticks"] == summary["ticks"] == torch_replays[session_id]["ticks"]
    assert summary["unknownCommands"] == torch_replays[session_id]["unknownCommands"] == 0
    # Its state is its own: the probabilities differ from those fed the person's commands.
    fed_by_itself = own.of("prediction")
    assert len(fed_by_itself) == len(fed_by_person[session_id])
    assert any(
        abs(mine["types"][name]["probability"] - theirs["types"][name]["probability"]) > 1e-6
        for mine, theirs in zip(fed_by_itself, fed_by_person[session_id], strict=True)
        for name in mine["types"]
    )
    both = cli("replay", str(checkpoint), str(synth_copy), session_id, "--own-history", "--blind")
    assert both.code == 2 and both.last()["code"] == "usage"

    # The export checks onnxruntime on the job's own held-out windows (from the cache), and the
    # exported model replays the same session to the same result.
    out = synth_copy.parent / "exported"
    exported = cli("export", str(checkpoint), "--out", str(out))
    assert exported.code == 0, exported.stderr
    parity = exported.last()["parity"]
    assert parity["sources"]["heldOut"] == windows and parity["windows"] >= 256
    assert parity["maxAbsDiffProbability"] <= 1e-4
    session_id = held_out[0]
    onnx = cli("replay", str(out), str(synth_copy), session_id).last()
    assert onnx["model"]["engine"] == "onnxruntime"
    for name, row in onnx["types"].items():
        expected = torch_replays[session_id]["types"][name]
        assert row["truePositive"] + row["falseNegative"] == (
            expected["truePositive"] + expected["falseNegative"]
        )
        assert abs(row["truePositive"] - expected["truePositive"]) <= 1
        assert abs(row["falsePositive"] - expected["falsePositive"]) <= 1


def test_replay_refuses_a_missing_session_and_a_tampered_checkpoint(cli, tmp_path: Path) -> None:
    from test_export import make_checkpoint

    root = tmp_path / "root"
    checkpoint, _ = make_checkpoint(root, seed=5)
    result = cli("replay", str(checkpoint), str(root), "nope")
    assert result.code == 1 and result.last()["code"] == "not_found"
    (checkpoint / "weights.safetensors").write_bytes(b"0" * 10)
    result = cli("replay", str(checkpoint), str(root), "nope")
    assert result.code == 1 and result.last()["code"] == "invalid_checkpoint"
