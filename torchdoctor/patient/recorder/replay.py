"""What to replay under the recorder, and the one recording an investigation shares.

The user's first run is never recorded, so it runs at full speed. When a
probe needs to know what the failing run did, the run is replayed once
under the recorder and the recording is kept on the context:

- a script that failed within ``budget`` seconds is run again from the
  start, in a clean ``__main__`` with the user's own modules imported anew;
- a script that failed later is not run again for hours: its failing step
  is replayed from the failing frames' model, batch, loss and optimizer;
- a harness replays its ``train_step`` (or the standard step).

Each recording says which replay was done, whether the error came back,
and what the replay could not see.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from typing import Any

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import first_line
from torchdoctor.patient.probes._frames import USER, file_kind
from torchdoctor.patient.recorder.recorder import DEFAULT_RING, Recorder

DEFAULT_BUDGET = 30.0
_CACHE_KEY = "recording"


def settings(ring: int | None = None, budget: float | None = None) -> tuple[int, float]:
    """The ring size and the replay budget: given, else ``TORCHDOCTOR_RING`` /
    ``TORCHDOCTOR_REPLAY_BUDGET``, else the defaults."""
    if ring is None:
        ring = int(os.environ.get("TORCHDOCTOR_RING") or DEFAULT_RING)
    if budget is None:
        budget = float(os.environ.get("TORCHDOCTOR_REPLAY_BUDGET") or DEFAULT_BUDGET)
    return int(ring), float(budget)


def recording_for(ctx: ProbeContext, ring: int | None = None,
                  budget: float | None = None) -> dict[str, Any]:
    """The recording of the failing run, replayed on first use and shared afterwards."""
    ring, budget = settings(ring, budget)
    cached = ctx.extras.get(_CACHE_KEY)
    if cached is not None and cached["ring"] == ring and cached["budget"] == budget:
        return cached
    script = ctx.extras.get("script")
    if ctx.source == "script" and script:
        first = script.get("seconds")
        if first is not None and first > budget:
            recording = replay_step(ctx, ring, "failing_step")
            recording["could_not_see"].insert(
                0, f"the {first:.0f} s of the script before the failing step (past the "
                   f"{budget:g} s replay budget)")
        else:
            recording = replay_script(script["path"], script.get("argv") or [],
                                      script.get("cwd"), ring)
        recording["first_run_seconds"] = first
    elif ctx.source == "harness":
        recording = replay_step(ctx, ring, "harness_step")
    else:
        recording = _nothing("no script or harness target is loaded", ring)
    recording["budget"] = budget
    recording["reproduced"] = _same_error(recording.get("error"), ctx.error)
    ctx.extras[_CACHE_KEY] = recording
    return recording


def replay_script(path: str, argv: list[str], cwd: str | None, ring: int) -> dict[str, Any]:
    """The whole script again, as ``python SCRIPT ARGS`` would run it, under the recorder."""
    started = time.perf_counter()
    with Recorder(ring) as recorder:
        error, exited = run_as_first_run(path, argv, cwd)
    recording = _finished(recorder, "script", error, exited, time.perf_counter() - started, [
        "backward kernels one by one: a backward call is one op, its failure one event",
    ])
    recording["outer_frame"] = recorder.outer_frame(error)
    return recording


def run_as_first_run(path: str, argv: list[str], cwd: str | None
                     ) -> tuple[BaseException | None, str]:
    """Run the script as ``python SCRIPT ARGS`` ran it first: its own modules imported anew,
    the same seed, argv, working directory and ``sys.path[0]``. Returns the exception it
    raised (None) and how it ended."""
    _forget_user_modules(os.path.dirname(os.path.abspath(path)))
    _reseed()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = [path, *argv]
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    if cwd:
        os.chdir(cwd)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        return None, "sys.exit"
    except Exception as exc:  # noqa: BLE001 - the user's error is the run's end
        return exc, "raised"
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    return None, "clean"


def replay_step(ctx: ProbeContext, ring: int, kind: str) -> dict[str, Any]:
    """One training step on the context's own objects, restored afterwards."""
    if ctx.model is None or ctx.batch is None or (ctx.loss_fn is None
                                                  and ctx.train_step is None):
        missing = [name for name, value in (("a model", ctx.model), ("a batch", ctx.batch),
                                            ("a loss", ctx.loss_fn or ctx.train_step))
                   if value is None]
        return _nothing(f"the failing frames hold no {' or '.join(missing)} to replay a"
                        " step with", ring)
    error, exited = None, "clean"
    started = time.perf_counter()
    with preserved(ctx.model, ctx.optimizer), Recorder(ring) as recorder:
        try:
            ctx.step()
        except Exception as exc:  # noqa: BLE001 - the user's error is the recording's end
            error, exited = exc, "raised"
    blind = ["backward kernels one by one: a backward call is one op, its failure one event"]
    if ctx.train_step is None:
        blind.insert(0, "the user's own loop around the step: it was replayed as zero_grad,"
                        " forward, loss, backward, step, so helpers, extra backward passes"
                        " and code between them did not run")
    if kind == "harness_step":
        blind.insert(0, "what the harness did before its step (building model and batch)")
    return _finished(recorder, kind, error, exited, time.perf_counter() - started, blind)


def _finished(recorder: Recorder, kind: str, error: BaseException | None, exited: str,
              seconds: float, blind: list[str]) -> dict[str, Any]:
    recording = recorder.to_json()
    recording.update(
        replay=kind, exited=exited, seconds=round(seconds, 4), could_not_see=blind,
        error=({"type": type(error).__name__, "message": first_line(str(error), 2000)}
               if error is not None else None),
    )
    if recording["dropped"]:
        blind.append(f"the first {recording['dropped']} of {recording['recorded']} events:"
                     f" the ring keeps the last {recording['ring']}")
    return recording


def _nothing(why: str, ring: int) -> dict[str, Any]:
    return {"replay": "none", "why": why, "ring": ring, "recorded": 0, "kept": 0,
            "dropped": 0, "optimizer_steps": 0, "events": [], "failure": None,
            "error": None, "exited": None, "seconds": 0.0, "could_not_see": [why]}


def _same_error(replayed: dict | None, original: dict | None) -> bool | None:
    """Whether the replay raised the error of the first run (None: there was none to compare)."""
    if original is None:
        return None
    if replayed is None:
        return False
    return (replayed["type"] == original.get("type")
            and first_line(replayed["message"], 300)
            == first_line(str(original.get("message") or ""), 300))


def _forget_user_modules(directory: str) -> None:
    """The script's own modules (beside it or below) run anew, as in a fresh interpreter;
    libraries, and whatever runs the patient, stay imported."""
    prefix = directory.rstrip(os.sep) + os.sep
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if (filename and file_kind(filename) == USER
                and os.path.abspath(filename).startswith(prefix)):
            del sys.modules[name]


def _reseed() -> None:
    """The same seed the first run started from, when the patient was given one."""
    if os.environ.get("TORCHDOCTOR_SEED"):
        from torchdoctor.patient.__main__ import _seed

        _seed(os.environ["TORCHDOCTOR_SEED"])
