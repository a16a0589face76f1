"""Command line: thin click wrappers. Heavy modules are imported inside commands so that
`--help` stays instant and never imports torch, av or numpy.

A command's body is a function of (stream, **options) returning an exit code; `events_body`
makes it the click command, and `_run_with_events` turns its outcome into the exit code."""

from __future__ import annotations

import functools
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Concatenate, ParamSpec

import click

from rovertrain import __version__
from rovertrain.contracts.decision import RUNTIME_KEYS, DecisionRules, recorded_rules
from rovertrain.contracts.errors import ErrorCode, RovertrainError
from rovertrain.contracts.exitcodes import ExitCode, exit_code_for_error
from rovertrain.contracts.settings import knobs
from rovertrain.sim import registry
from rovertrain.sim.choices import (
    CONTINUOUS,
    DEFAULT_STARTS,
    DRIVERS,
    STARTS,
    SUPERVISED_STARTS,
    choices_help,
)
from rovertrain.sim.world_protocol import SynthRequest

if TYPE_CHECKING:
    from rovertrain.distributed.rank_place import RankPlace
    from rovertrain.protocol.events import EventStream

P = ParamSpec("P")


def _run_with_events(body: Callable[[EventStream], int], writes_events: bool = True) -> None:
    """Claim stdout for events, run `body`, and turn any failure into one `error` event.

    This is the one place where a command's outcome becomes its exit code. A rank other than
    0 of a distributed job (`writes_events` false) writes no events: rank 0 owns the stream.
    """
    from rovertrain.protocol.events import EventStream, claim_stdout

    stream = EventStream(claim_stdout() if writes_events else None)
    code: int
    try:
        require_linux()
        code = body(stream)
    except RovertrainError as error:
        code = _emit_error(stream, error.event_fields(), exit_code_for_error(error.code))
    except KeyboardInterrupt:
        code = _emit_error(
            stream, {"code": "interrupted", "message": "Interrupted."}, ExitCode.FAILED
        )
    except Exception as error:
        code = _emit_error(
            stream,
            {
                "code": "internal",
                "message": f"rovertrain failed unexpectedly: {type(error).__name__}: {error}",
                "detail": traceback.format_exc(),
            },
            ExitCode.FAILED,
        )
    finally:
        stream.close()
    if stream.reader_gone:
        code = ExitCode.SUPERVISOR_GONE
    sys.exit(int(code))


def events_body(function: Callable[Concatenate[EventStream, P], int]) -> Callable[P, None]:
    """A command body from `function(stream, **options)`: called with the command's options,
    it runs `function` through `_run_with_events` (stdout claimed for events, failures as one
    `error` event, the exit code). Put it under the click decorators, over the function."""

    @functools.wraps(function)
    def command(*args: P.args, **kwargs: P.kwargs) -> None:
        _run_with_events(lambda stream: function(stream, *args, **kwargs))

    return command


def require_linux() -> None:
    """flock, renameat2, SIGTSTP and /proc are Linux's: say so before anything else runs."""
    if not sys.platform.startswith("linux"):
        raise RovertrainError(
            ErrorCode.UNSUPPORTED_PLATFORM,
            f"rovertrain runs on Linux only (this is {sys.platform}): it relies on flock, "
            "renameat2, SIGTSTP and /proc.",
        )


def _emit_error(stream: EventStream, fields: Mapping[str, object], code: ExitCode) -> int:
    if not stream.terminal_written:
        stream.emit("error", **fields)
    from rovertrain.protocol.console import console_line

    line = f"error: {fields['message']}"
    if stream.fd is None:
        # No event carries this outcome (a rank other than 0): stderr says all of it.
        line += f" [{fields['code']}] {fields.get('detail') or ''}".rstrip()
    console_line(line)
    return code


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rovertrain")
def cli() -> None:
    """Turn recorded rover drives into a driving policy.

    Every command writes NDJSON events (one JSON object per line) to stdout and human text to
    stderr. Exit codes: 0 done, 1 failed, 2 invalid invocation or job, 75 data root locked,
    141 stdout closed by the reader.
    """


@cli.command()
@click.option("--job", "job_path", required=True, help="Job file (JSON), or - for stdin.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress on stderr (default: on when stderr is a terminal).",
)
@click.option(
    "--nproc",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="Ranks on this machine, started by torch.distributed.run (docs/scale-out.md).",
)
def run(job_path: str, progress: bool | None, nproc: int) -> None:
    """Run one finite training job."""
    import os

    from rovertrain.distributed.rank_place import rank_place_from_env

    place = rank_place_from_env(os.environ)
    # The one command whose stream depends on where it runs: a rank other than 0 writes none.
    body = functools.partial(
        _run_job, place=place, job_path=job_path, progress=progress, nproc=nproc
    )
    try:
        _run_with_events(body, writes_events=place.leads)
    finally:
        from rovertrain.job.control import ignore_stop_signals

        ignore_stop_signals()


def _run_job(
    stream: EventStream, place: RankPlace, job_path: str, progress: bool | None, nproc: int
) -> int:
    from rovertrain.job.config import load_job_file
    from rovertrain.job.run import run_job
    from rovertrain.protocol.console import stderr_is_terminal

    job = load_job_file(job_path)
    if nproc > 1:
        if place.distributed:
            raise RovertrainError(
                ErrorCode.USAGE, "--nproc cannot be used by a rank of a launched job."
            )
        from rovertrain.job.launch import launch_local

        return launch_local(job, nproc, stream, progress)
    watchers = []
    if place.leads and (stderr_is_terminal() if progress is None else progress):
        from rovertrain.cli.progressview import ProgressView

        watchers.append(ProgressView(len(job.sessions or ()), job.config.budget.maxJobSeconds))
    return run_job(job, stream, watchers)


@cli.command("check-deps")
@events_body
def check_deps(stream: EventStream) -> int:
    """Prove the installation works: versions, policy, a PyAV encode/decode self-test."""
    from rovertrain.cli.checkdeps import check_dependencies

    stream.emit("dependencies", **check_dependencies())
    return ExitCode.COMPLETED


@cli.command("validate-job")
@click.argument("job_path", metavar="FILE")
@click.option(
    "--offline", is_flag=True, help="Check against the schema only: no root or sessions needed."
)
@events_body
def validate_job(stream: EventStream, job_path: str, offline: bool) -> int:
    """Check a job file without running it (schema, root, sessions)."""
    from rovertrain.job.config import load_job_file
    from rovertrain.job.preflight import validate_job_offline, validate_job_on_disk

    job = load_job_file(job_path)
    check = validate_job_offline if offline else validate_job_on_disk
    stream.emit("validated", **check(job))
    return ExitCode.COMPLETED


@cli.command()
@click.option("--out", "out", required=True, type=click.Path(), help="Data root to create.")
@click.option("--sessions", default=12, show_default=True, type=click.IntRange(1, 500))
@click.option("--minutes", default=2.0, show_default=True, type=click.FloatRange(0.05, 120))
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1))
@click.option("--shuffle-commands", is_flag=True, help="Scramble command times (unlearnable).")
@click.option(
    "--world",
    default="road",
    show_default=True,
    type=click.Choice(registry.world_names()),
    help=registry.world_help(),
)
@click.option(
    "--driver",
    default=CONTINUOUS,
    show_default=True,
    type=click.Choice(tuple(DRIVERS)),
    help=f"Who records the sessions: {choices_help(DRIVERS)}",
)
@events_body
def synth(
    stream: EventStream,
    out: str,
    sessions: int,
    minutes: float,
    seed: int,
    shuffle_commands: bool,
    world: str,
    driver: str,
) -> int:
    """Write synthetic driving recordings and a ready job file."""
    request = SynthRequest(out, sessions, minutes, seed, shuffle_commands, driver)
    recorded = registry.lookup(world).synthesize(request)
    stream.emit("synthesized", **recorded)
    return ExitCode.COMPLETED


@cli.command()
@click.argument("root", type=click.Path())
@click.argument("session_ids", nargs=-1, metavar="[SESSION]...")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 64))
@events_body
def inspect(stream: EventStream, root: str, session_ids: tuple[str, ...], threads: int) -> int:
    """Decode and window recordings without training."""
    from rovertrain.cli.inspect import inspect_root

    return inspect_root(root, session_ids, threads, stream)


@cli.group("import")
def import_group() -> None:
    """Import other formats' drives as recordings (docs/importing.md)."""


def _import_options(function: Callable[..., None]) -> Callable[..., None]:
    options = [
        click.option(
            "--out", "out", required=True, type=click.Path(), help="Data root to write into."
        ),
        click.option("--dry-run", is_flag=True, help="List what would be written; write nothing."),
        click.option(
            "--tolerance",
            default=0.05,
            show_default=True,
            type=click.FloatRange(0.0, 2.0),
            help="A control must change by more than this to send a new drive command.",
        ),
        click.option(
            "--keepalive-ms",
            default=500.0,
            show_default=True,
            type=click.FloatRange(1.0, 60_000.0),
            help="While moving, a drive command at least this often.",
        ),
        click.option(
            "--progress/--no-progress",
            default=None,
            help="Live progress on stderr (default: on when stderr is a terminal).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@import_group.command("donkey")
@click.argument("tubs", nargs=-1, required=True, metavar="TUB_DIR...", type=click.Path())
@_import_options
@click.option("--rover-id", default="donkeycar", show_default=True, help="roverId to record.")
@events_body
def import_donkey(
    stream: EventStream,
    tubs: tuple[str, ...],
    out: str,
    dry_run: bool,
    tolerance: float,
    keepalive_ms: float,
    progress: bool | None,
    rover_id: str,
) -> int:
    """Donkeycar tubs (v2): one recording per Donkeycar session, the human's records only."""
    from pathlib import Path

    from rovertrain.importers.donkey import DonkeyOptions, import_tubs
    from rovertrain.importers.report import ImportRun, Progress
    from rovertrain.protocol.console import stderr_is_terminal

    show = stderr_is_terminal() if progress is None else progress
    run = ImportRun(stream, Progress(show), dry_run)
    options = DonkeyOptions(Path(out), dry_run, tolerance, keepalive_ms, rover_id)
    import_tubs([Path(tub) for tub in tubs], options, run)
    run.finish("donkey")
    return ExitCode.COMPLETED


@import_group.command("lerobot")
@click.argument("dataset", metavar="DATASET_DIR", type=click.Path())
@_import_options
@click.option("--episodes", default=None, help="Episodes to import, e.g. 0,2,5-9 (default all).")
@click.option(
    "--action-map", "action_map", type=click.Path(), help="JSON file: action dims to commands."
)
@click.option("--camera", default=None, help="Video feature to use (default: the first).")
@click.option("--rover-id", default=None, help="roverId to record (default: robot_type).")
@events_body
def import_lerobot(
    stream: EventStream,
    dataset: str,
    out: str,
    dry_run: bool,
    tolerance: float,
    keepalive_ms: float,
    progress: bool | None,
    episodes: str | None,
    action_map: str | None,
    camera: str | None,
    rover_id: str | None,
) -> int:
    """A local LeRobotDataset (v3): one recording per episode (needs rovertrain[import])."""
    from pathlib import Path

    from rovertrain.importers.lerobot import LerobotOptions, import_dataset
    from rovertrain.importers.report import ImportRun, Progress
    from rovertrain.protocol.console import stderr_is_terminal

    show = stderr_is_terminal() if progress is None else progress
    run = ImportRun(stream, Progress(show), dry_run)
    options = LerobotOptions(
        Path(out), dry_run, tolerance, keepalive_ms, episodes, action_map, camera, rover_id
    )
    import_dataset(Path(dataset), options, run)
    run.finish("lerobot")
    return ExitCode.COMPLETED


@import_group.command("rosbag")
@click.argument("bags", nargs=-1, required=True, metavar="BAG...", type=click.Path())
@_import_options
@click.option("--image-topic", default=None, help="Camera topic (default: detected).")
@click.option(
    "--command-topic",
    "command_topics",
    multiple=True,
    help="A topic a person drove on (repeatable; default: detected).",
)
@click.option("--map", "map_file", type=click.Path(), help="JSON map file: topics, values, by.")
@click.option("--rover-id", default="ros", show_default=True, help="roverId to record.")
@click.option(
    "--driven-by", default=None, help="Model id that drove the policy topics (supervised bags)."
)
@events_body
def import_rosbag(
    stream: EventStream,
    bags: tuple[str, ...],
    out: str,
    dry_run: bool,
    tolerance: float,
    keepalive_ms: float,
    progress: bool | None,
    image_topic: str | None,
    command_topics: tuple[str, ...],
    map_file: str | None,
    rover_id: str,
    driven_by: str | None,
) -> int:
    """ROS 1 bags (.bag) and ROS 2 bags (folders, SQLite or MCAP): camera and commands
    (needs rovertrain[rosbag])."""
    from pathlib import Path

    from rovertrain.importers.report import ImportRun, Progress
    from rovertrain.importers.rosbag import (
        RosbagOptions,
        driven_by_model,
        import_bags,
        read_map,
    )
    from rovertrain.protocol.console import stderr_is_terminal

    bag_map = read_map(map_file, image_topic, command_topics)
    show = stderr_is_terminal() if progress is None else progress
    run = ImportRun(stream, Progress(show), dry_run)
    options = RosbagOptions(
        Path(out), dry_run, tolerance, keepalive_ms, rover_id, bag_map, driven_by_model(driven_by)
    )
    import_bags([Path(bag) for bag in bags], options, run)
    run.finish("rosbag")
    return ExitCode.COMPLETED


@cli.command()
@click.argument("root", type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@events_body
def review(stream: EventStream, root: str, host: str, port: int) -> int:
    """Look at the fleet's drives and models in a browser; leave bad stretches out of
    training (needs rovertrain[review])."""
    from rovertrain.cli.review import serve_review

    return serve_review(stream, root, host, port)


@cli.command()
@click.argument("root", type=click.Path())
@click.option("--current", is_flag=True, help="Only the promoted one (training/current.json).")
@events_body
def models(stream: EventStream, root: str, current: bool) -> int:
    """List published checkpoints, verifying every file."""
    from rovertrain.cli.models import list_models, show_current

    return show_current(root, stream) if current else list_models(root, stream)


def decision_options(command: Callable[P, None]) -> Callable[P, None]:
    """`export`'s options, one per decision knob (`contracts.decision`): named as runtime.json
    names the knob (`--threshold`, `--steering-deadband`, `--start-threshold`), bounded as a
    record may hold it, with the value a checkpoint written before the knob runs with. Each
    is passed under the knob's name; None when not given (the job's value from model.json)."""
    before = recorded_rules({})  # what a record without the knobs runs with
    for field in reversed(knobs(DecisionRules)):
        spec, key = field.spec, RUNTIME_KEYS.get(field.name, field.name)
        flag = "--" + re.sub(r"(?<=[a-z])(?=[A-Z])", "-", key).lower()
        command = click.option(
            flag,
            field.name,
            type=click.FloatRange(spec.minimum, spec.maximum),
            help=f"{spec.doc[:1].upper()}{spec.doc[1:]}. Default: the job's {field.name} from "
            f"model.json; a checkpoint from before it: {getattr(before, field.name):g}.",
        )(command)
    return command


@cli.command()
@click.argument("checkpoint", metavar="CHECKPOINT_DIR", type=click.Path())
@click.option("--out", "out", required=True, type=click.Path(), help="Folder to create.")
@decision_options
@events_body
def export(stream: EventStream, /, checkpoint: str, out: str, **rules: float | None) -> int:
    """Export a verified checkpoint to ONNX for the rover runtime (needs rovertrain[deploy])."""
    from rovertrain.deploy.export import export_checkpoint
    from rovertrain.protocol.console import console_line

    exported = export_checkpoint(checkpoint, out, rules)
    stream.emit("exported", **exported)
    parity = exported["parity"]
    assert isinstance(parity, dict)
    console_line(
        f"exported {exported['name']} to {exported['path']} (torch vs onnxruntime: "
        f"max |dp| {parity['maxAbsDiffProbability']:.2e} on {parity['windows']} windows)"
    )
    return ExitCode.COMPLETED


@cli.command()
@click.argument("checkpoint", metavar="CHECKPOINT", type=click.Path())
@click.argument("root", type=click.Path())
@click.argument("session_id", metavar="SESSION")
@click.option("--out", "out", type=click.Path(), help="Folder for timeline.png and overlay.mp4.")
@click.option("--blind", is_flag=True, help="Grey frames instead of the camera (and compare).")
@click.option(
    "--own-history",
    is_flag=True,
    help="Feed the policy its own commands, not the person's, as on a rover it drives "
    "(frames stay the recording's); the summary says where each rover moved and stood.",
)
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress on stderr (default: on when stderr is a terminal).",
)
@events_body
def replay(
    stream: EventStream,
    checkpoint: str,
    root: str,
    session_id: str,
    out: str | None,
    blind: bool,
    own_history: bool,
    threads: int,
    progress: bool | None,
) -> int:
    """Run one recording through the rover runtime, tick by tick (CHECKPOINT: an exported
    folder or a checkpoint folder)."""
    from rovertrain.deploy.replay import replay_session
    from rovertrain.protocol.console import stderr_is_terminal

    show = stderr_is_terminal() if progress is None else progress
    return replay_session(
        checkpoint, root, session_id, out, blind, threads, show, stream, own_history
    )


@cli.command()
@click.argument("checkpoint", metavar="CHECKPOINT", type=click.Path())
@click.option(
    "--world",
    default="road",
    show_default=True,
    type=click.Choice(registry.world_names()),
    help=registry.world_help(),
)
@click.option("--seconds", type=click.FloatRange(1, 3600), help=registry.seconds_help())
@click.option(
    "--seed",
    "seed_list",
    multiple=True,
    type=click.IntRange(0, 2**32 - 1),
    help="World seed (repeatable; default 0).",
)
@click.option(
    "--seeds",
    "seed_count",
    type=click.IntRange(1, 100),
    help="Drive world seeds 0..N-1 (instead of --seed).",
)
@click.option("--out", "out", type=click.Path(), help="Folder for rollout.mp4, trajectory.png.")
@click.option(
    "--baselines/--no-baselines",
    default=True,
    show_default=True,
    help="Also drive the human model, the copycat and the blind policy on the same seeds.",
)
@click.option(
    "--driver",
    default=CONTINUOUS,
    show_default=True,
    type=click.Choice(tuple(DRIVERS)),
    help="Who drives the human baseline (the driver the recordings were made with).",
)
@click.option(
    "--start",
    "start_list",
    multiple=True,
    type=click.Choice(tuple(STARTS)),
    help="How the controllers get the rover (repeatable; default: "
    f"{' and '.join(DEFAULT_STARTS)}; with --supervised one of "
    f"{' or '.join(SUPERVISED_STARTS)}, default {SUPERVISED_STARTS[0]}): "
    f"{choices_help(STARTS)}",
)
@click.option(
    "--supervised",
    is_flag=True,
    help="Drive fresh (field) worlds while the human model watches and takes over outside "
    f"the safety envelope; reports take-overs ({', '.join(registry.supervised_names())}).",
)
@click.option(
    "--record",
    "record",
    type=click.Path(),
    help="With --supervised: write each rollout as a recording under this root.",
)
def drive(
    checkpoint: str,
    world: str,
    seconds: float | None,
    seed_list: tuple[int, ...],
    seed_count: int | None,
    out: str | None,
    baselines: bool,
    driver: str,
    start_list: tuple[str, ...],
    supervised: bool,
    record: str | None,
) -> None:
    """Let the policy drive a simulated world, closed loop, next to its baselines
    (CHECKPOINT: an exported folder or a checkpoint folder)."""
    if supervised and (len(start_list) > 1 or not set(start_list) <= set(SUPERVISED_STARTS)):
        raise click.UsageError(
            f"--supervised takes one --start of {', '.join(SUPERVISED_STARTS)} "
            f"(default {SUPERVISED_STARTS[0]})"
        )
    if seed_list and seed_count is not None:
        raise click.UsageError("give --seed or --seeds, not both")
    if record is not None and not supervised:
        raise click.UsageError("--record records supervised drives: add --supervised")
    if supervised and out is not None:
        raise click.UsageError("--out films an unsupervised drive; --supervised has --record")
    seeds = list(range(seed_count)) if seed_count is not None else list(seed_list or (0,))
    seeds = list(dict.fromkeys(seeds))  # a seed given twice is driven once
    # In report order (`STARTS`), each once.
    starts = tuple(name for name in STARTS if name in start_list) or (
        SUPERVISED_STARTS[:1] if supervised else DEFAULT_STARTS
    )
    _drive(checkpoint, world, seconds, seeds, out, baselines, driver, starts, supervised, record)


@events_body
def _drive(
    stream: EventStream,
    checkpoint: str,
    world: str,
    seconds: float | None,
    seeds: list[int],
    out: str | None,
    baselines: bool,
    driver: str,
    starts: tuple[str, ...],
    supervised: bool,
    record: str | None,
) -> int:
    """`drive` once its options are checked (a usage error is click's, before any event)."""
    from rovertrain.deploy.drive import drive_policy

    length = seconds if seconds is not None else registry.lookup(world).default_seconds
    if supervised:
        from rovertrain.deploy.supervised_drive import drive_supervised

        return drive_supervised(checkpoint, world, length, seeds, record, stream, driver, starts[0])
    return drive_policy(checkpoint, world, length, seeds, out, baselines, driver, starts, stream)


@cli.command()
@click.argument("job_dir", metavar="JOBDIR", type=click.Path())
@click.option("--follow", "-f", is_flag=True, help="Keep following until the terminal event.")
@click.option("--raw/--human", default=None, help="NDJSON (default when piped) or text.")
@events_body
def events(stream: EventStream, job_dir: str, follow: bool, raw: bool | None) -> int:
    """Print a job's events from the first one (root/training/jobs/<jobId>)."""
    from rovertrain.protocol.eventlog import replay

    assert stream.fd is not None
    return replay(job_dir, follow, raw, stream.fd)


@cli.command()
@click.argument("job_dir", metavar="JOBDIR", type=click.Path())
@click.option("--out", "out", type=click.Path(), help="PNG path (default JOBDIR/report.png).")
@events_body
def report(stream: EventStream, job_dir: str, out: str | None) -> int:
    """Draw a job's dashboard: losses, held-out metrics against the gate, data set."""
    from rovertrain.cli.report import write_report

    stream.emit("report", **write_report(job_dir, out))
    return ExitCode.COMPLETED


@cli.command()
@click.argument(
    "name", type=click.Choice(["events", "job", "session", "command", "model"], case_sensitive=True)
)
@events_body
def schema(stream: EventStream, name: str) -> int:
    """Emit one of the shipped JSON Schemas as a `schema` event (`jq .schema` extracts it)."""
    from rovertrain.protocol.schemas import load_schema

    stream.emit("schema", name=name, schema=load_schema(name))
    return ExitCode.COMPLETED


def main() -> None:
    cli(prog_name="rovertrain")
