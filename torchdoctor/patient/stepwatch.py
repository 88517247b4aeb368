"""Run a script as ``__main__`` and stop it after a number of optimizer steps.

``python -m torchdoctor.patient.stepwatch RESULT STEPS SCRIPT [ARGS...]``

Verifying a fix means seeing the script get further than it did: past the
point where it failed, through real optimizer steps, with a loss that is a
number. Training scripts run for hours, so the run stops once it has taken
``STEPS`` steps (0: run to the end). When the number is not known at the
start (the unpatched copy runs beside this one and has not failed yet), the
environment variable ``TORCHDOCTOR_STEP_LIMIT`` names a file the doctor
writes it to later; it is read after every step. The outcome goes to the
file ``RESULT`` as JSON, never to stdout, which belongs to the script.
"""

from __future__ import annotations

import json
import math
import os
import runpy
import sys
import time
import traceback

# The losses kept for the report: enough to see a trend, bounded for a long run.
MAX_LOSSES = 200


class StepsReached(BaseException):
    """Raised from the step hook; a BaseException so the script's ``except Exception`` lets it by."""


def main(argv: list[str]) -> int:
    result_path, steps_wanted, script, *script_args = argv
    steps_wanted = int(steps_wanted)
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    state = {"steps": 0, "losses": [], "backwards": 0}
    limit_file = os.environ.pop("TORCHDOCTOR_STEP_LIMIT", "")

    def after_step(optimizer, args, kwargs) -> None:
        state["steps"] += 1
        wanted = steps_wanted or _limit(limit_file)
        if wanted and state["steps"] >= wanted:
            raise StepsReached

    register_optimizer_step_post_hook(after_step)
    backward = torch.Tensor.backward

    def watched_backward(self, *args, **kwargs):
        state["backwards"] += 1
        if self.numel() == 1 and len(state["losses"]) < MAX_LOSSES:
            value = float(self.detach().float().cpu())
            state["losses"].append(value if math.isfinite(value) else str(value))
        return backward(self, *args, **kwargs)

    torch.Tensor.backward = watched_backward
    script = os.path.abspath(script)
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(script))
    started = time.perf_counter()
    outcome: dict = {"ended": "exited", "exit_code": 0}
    try:
        runpy.run_path(script, run_name="__main__")
    except StepsReached:
        outcome = {"ended": "steps_reached", "exit_code": 0}
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        outcome = {"ended": "exited", "exit_code": code}
    except BaseException as raised:  # noqa: BLE001 — the verdict needs it, not a crash
        outcome = {"ended": "raised", "exit_code": 1, "error": _error(raised, script)}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    outcome.update(seconds=round(time.perf_counter() - started, 3), steps=state["steps"],
                   backwards=state["backwards"], losses=state["losses"])
    with open(result_path, "w", encoding="utf-8") as stream:
        json.dump(outcome, stream, default=repr)
    return 0


def _limit(path: str) -> int:
    """The step limit the doctor wrote once it knew it; 0 while there is none."""
    if not path:
        return 0
    try:
        with open(path, encoding="utf-8") as stream:
            return int(stream.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _error(raised: BaseException, script: str) -> dict:
    """The exception and its innermost frame in the user's own files (not torch's)."""
    frames = traceback.extract_tb(raised.__traceback__)
    root = os.path.dirname(script)
    user = [f for f in frames if os.path.abspath(f.filename).startswith(root + os.sep)]
    frame = (user or frames or [None])[-1]
    try:
        message = str(raised)
    except Exception:  # noqa: BLE001 — a broken __str__ must not hide the type
        message = f"<{type(raised).__name__} whose message could not be printed>"
    return {
        "type": type(raised).__name__, "message": message,
        "traceback": "".join(traceback.format_exception(type(raised), raised,
                                                        raised.__traceback__))[-20000:],
        "frame": None if frame is None else {
            "file": frame.filename, "line": frame.lineno, "function": frame.name,
            "code": frame.line or ""},
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
