"""Fault injection for the test suite; product code knows nothing of it.

tests/conftest.py puts this folder on PYTHONPATH of the CLI processes a test starts and sets
ROVERTRAIN_FAULTS to a JSON object. Python imports `sitecustomize` at start-up in every
interpreter that inherits that PYTHONPATH, spawned decoder children included, and this file
then wraps the product functions named in TARGETS: at once if their module is already
imported, otherwise right after it is (an import hook on sys.meta_path). Modules that copied
a wrapped function with `from ... import` are rebound too.

Faults (the keys of ROVERTRAIN_FAULTS):
  crash, hang        session ids whose decoder child segfaults (SIGSEGV) or hangs forever
  slowFrameSeconds   sleep for each decoded frame
  slowWriteSeconds   durable writes go in 1 MiB pieces with this sleep after each
  failFsync          fsync of a written file or of a folder fails with EIO
  failRename         the no-replace rename that publishes fails with EIO
  stuckSeconds       a blocking call (time.sleep) before each training step once one ran;
                     the watchdog must outlast it
  slowPhaseSeconds   sleep right after the job enters the `train` phase
  nanLossOnRank      the training loss is NaN on the rank with this RANK (not 0: 0 reads as unset)
  stuckOnRank        the rank with this RANK (not 0) blocks for an hour in a training step's
                     agreement, alive and silent; its watchdog is left to end it
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import importlib.abc
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

VARIABLE = "ROVERTRAIN_FAULTS"

# Where the faults strike, in one place: wrapper (defined below) -> ("module:attribute", keys).
# To retarget a fault, name another product function here that takes the same arguments.
TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "decoder_child": ("rovertrain.video.decoder_child:main", ("crash", "hang")),
    "decoded_frame": ("rovertrain.video.source:FrameClock.place", ("slowFrameSeconds",)),
    "write_file": ("rovertrain.store.durable:write_durably", ("slowWriteSeconds", "failFsync")),
    "fsync_folder": ("rovertrain.store.durable:fsync_directory", ("failFsync",)),
    "rename": ("rovertrain.store.durable:rename_no_replace", ("failRename",)),
    "training_step": ("rovertrain.job.control:JobControl.safe_point", ("stuckSeconds",)),
    "phase_entered": ("rovertrain.job.control:JobControl.enter", ("slowPhaseSeconds",)),
    "training_loss": ("rovertrain.learn.losses:losses", ("nanLossOnRank",)),
    "rank_step": ("rovertrain.job.agreement:AgreedControl.safe_point", ("stuckOnRank",)),
}

Wrapper = Callable[[Callable[..., Any], dict[str, Any]], Callable[..., Any]]
WRAPPERS: dict[str, Wrapper] = {}
MARK = "__rovertrain_fault__"


def wrapper(name: str) -> Callable[[Wrapper], Wrapper]:
    def register(make: Wrapper) -> Wrapper:
        WRAPPERS[name] = make
        return make

    return register


# -- the faults ----------------------------------------------------------------------------


@wrapper("decoder_child")
def _decoder_child(main: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    crash, hang = set(faults.get("crash", [])), set(faults.get("hang", []))

    @functools.wraps(main)
    def child(request: Any, conn: Any) -> Any:
        session_id = getattr(request, "session_id", None) or request["sessionId"]
        if session_id in crash:
            os.kill(os.getpid(), signal.SIGSEGV)
        if session_id in hang:
            # Like a real child: dies with its parent, leaves SIGINT to the parent.
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            while True:
                time.sleep(3600)
        return main(request, conn)

    return child


@wrapper("decoded_frame")
def _decoded_frame(place: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    seconds = float(faults["slowFrameSeconds"])

    @functools.wraps(place)
    def slow_place(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return place(self, *args, **kwargs)

    return slow_place


@wrapper("write_file")
def _write_file(write: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    seconds = float(faults.get("slowWriteSeconds", 0))
    fail_fsync = bool(faults.get("failFsync"))
    chunk = 1 << 20

    @functools.wraps(write)
    def slow_or_failing_write(path: Any, data: bytes) -> None:
        # The product's write (a new file, written, flushed, fsync'd) on a slow or failing
        # disk: a reader sees the file grow piece by piece; a failing fsync raises EIO.
        if not seconds and not fail_fsync:
            return write(path, data)
        with open(path, "xb") as stream:
            for start in range(0, len(data), chunk):
                stream.write(data[start : start + chunk])
                if seconds:
                    stream.flush()
                    time.sleep(seconds)
            stream.flush()
            if fail_fsync:
                raise OSError(errno.EIO, "injected fsync failure")
            os.fsync(stream.fileno())
        return None

    return slow_or_failing_write


@wrapper("fsync_folder")
def _fsync_folder(fsync: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    @functools.wraps(fsync)
    def failing_fsync(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, "injected fsync failure")

    return failing_fsync


@wrapper("rename")
def _rename(rename: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    @functools.wraps(rename)
    def failing_rename(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, "injected rename failure")

    return failing_rename


@wrapper("training_step")
def _training_step(safe_point: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    seconds = float(faults["stuckSeconds"])

    @functools.wraps(safe_point)
    def stuck(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = safe_point(self, *args, **kwargs)
        # Once a step has begun the heartbeat names it ("training step N"); block the main
        # thread there as a stuck C call would: only the watchdog thread can end the job.
        if self.phase == "train" and str(self.activity).startswith("training step"):
            time.sleep(seconds)
        return result

    return stuck


@wrapper("phase_entered")
def _phase_entered(enter: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    seconds = float(faults["slowPhaseSeconds"])

    @functools.wraps(enter)
    def slow_enter(self: Any, phase: str, *args: Any, **kwargs: Any) -> Any:
        result = enter(self, phase, *args, **kwargs)
        if phase == "train":
            time.sleep(seconds)
        return result

    return slow_enter


@wrapper("training_loss")
def _training_loss(losses: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    rank = str(faults["nanLossOnRank"])

    @functools.wraps(losses)
    def nan_on_one_rank(*args: Any, **kwargs: Any) -> Any:
        event_loss, value_loss = losses(*args, **kwargs)
        import torch

        # Training only (gradients on): evaluation and the probe keep their losses.
        if os.environ.get("RANK") == rank and torch.is_grad_enabled() and event_loss.requires_grad:
            event_loss = event_loss * float("nan")
        return event_loss, value_loss

    return nan_on_one_rank


@wrapper("rank_step")
def _rank_step(safe_point: Callable[..., Any], faults: dict[str, Any]) -> Callable[..., Any]:
    rank = str(faults["stuckOnRank"])

    @functools.wraps(safe_point)
    def stuck(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = safe_point(self, *args, **kwargs)
        if os.environ.get("RANK") == rank and str(self.activity).startswith("training step"):
            time.sleep(3600)  # a stuck call: signals set flags, only the watchdog ends it
        return result

    return stuck


# -- patching ------------------------------------------------------------------------------


def _plan(faults: dict[str, Any]) -> dict[str, list[tuple[str, Wrapper]]]:
    """module -> [(attribute path, wrapper)] for the faults that are set."""
    known = {key for _target, keys in TARGETS.values() for key in keys}
    unknown = sorted(set(faults) - known)
    if unknown:
        raise ValueError(f"{VARIABLE}: unknown faults {unknown}; known: {sorted(known)}")
    plan: dict[str, list[tuple[str, Wrapper]]] = {}
    for name, (target, keys) in TARGETS.items():
        if any(faults.get(key) for key in keys):
            module, attribute = target.split(":")
            plan.setdefault(module, []).append((attribute, WRAPPERS[name]))
    return plan


def _patch(module: Any, patches: Sequence[tuple[str, Wrapper]], faults: dict[str, Any]) -> None:
    for path, make in patches:
        *owners, name = path.split(".")
        holder = module
        for owner in owners:
            holder = getattr(holder, owner)
        original = holder.__dict__[name] if isinstance(holder, type) else getattr(holder, name)
        if getattr(original, MARK, False):
            continue
        patched = make(original, faults)
        setattr(patched, MARK, True)
        setattr(holder, name, patched)
        if not owners:  # rebind copies taken with `from module import name`
            for other in list(sys.modules.values()):
                namespace = getattr(other, "__dict__", None)
                if isinstance(namespace, dict) and other is not module:
                    for key, value in list(namespace.items()):
                        if value is original:
                            namespace[key] = patched


class _PatchAfterExec(importlib.abc.Loader):
    def __init__(self, loader: Any, patches: Sequence[tuple[str, Wrapper]], faults: dict[str, Any]):
        self.loader = loader
        self.patches = patches
        self.faults = faults

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        _patch(module, self.patches, self.faults)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... of the real loader
        return getattr(self.loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, plan: dict[str, list[tuple[str, Wrapper]]], faults: dict[str, Any]):
        self.plan = plan
        self.faults = faults

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        patches = self.plan.get(fullname)
        if patches is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchAfterExec(spec.loader, patches, self.faults)
                return spec
        return None


def install(faults: dict[str, Any]) -> None:
    plan = _plan(faults)
    for module_name, patches in plan.items():
        if module_name in sys.modules:
            _patch(sys.modules[module_name], patches, faults)
    sys.meta_path.insert(0, _Finder(plan, faults))


def _main() -> None:
    raw = os.environ.get(VARIABLE)
    if not raw:
        return
    try:
        faults = json.loads(raw)
        if not isinstance(faults, dict):
            raise ValueError(f"{VARIABLE} must be a JSON object, not {raw!r}")
        install(faults)
    except Exception:
        # A test that asked for a fault must not silently run without it.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(97)


_main()
