"""Proving a patch on a copy: run it before and after, and compare how far each got.

A crash is fixed when the patched copy no longer raises the error and gets
further than the unpatched copy did: through more optimizer steps than it
managed before failing, or to a clean exit. The unpatched run comes first,
in the same scratch folder and the same way, so a difference between the
two runs is the patch's doing and not the copy's. A silent failure is fixed
when the check that failed on the harness passes on the patched copy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torchdoctor
from torchdoctor.process_groups import end_group, spawn

# Steps past the unpatched run's last one that count as "got further": its next
# optimizer.step() shows the patched copy went through the point where it failed.
EXTRA_STEPS = 1
OUTPUT_TAIL_CHARS = 4000


@dataclass
class Run:
    """One run of the copy, as the step watcher saw it."""

    command: str
    ended: str  # exited | steps_reached | raised | timeout | died
    seconds: float
    exit_code: int | None = None
    steps: int = 0
    losses: list = field(default_factory=list)
    error: dict | None = None
    output_tail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Verification:
    verdict: str  # verified | same_error | new_error | not_further | timeout | could_not_run
    #              | cancelled
    detail: str
    before: Run | None = None
    after: Run | None = None

    @property
    def verified(self) -> bool:
        return self.verdict == "verified"

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "verified": self.verified, "detail": self.detail,
                "before": self.before.to_dict() if self.before else None,
                "after": self.after.to_dict() if self.after else None}


def run_side_by_side(unpatched: tuple[Path, Path], patched: tuple[Path, Path],
                     argv: list[str], timeout: float,
                     stop: threading.Event | None = None) -> tuple[Run, Run]:
    """The unpatched and the patched copy (each a script and the folder it runs in) at once.

    Run one after the other they would cost twice the time to the failure; side by side
    the patched copy is told, as soon as the unpatched one has failed, to stop at the
    step after the last one the unpatched copy reached.
    """
    with tempfile.TemporaryDirectory(prefix="torchdoctor-limit-") as scratch:
        limit = Path(scratch) / "steps"
        runs: dict[str, Run] = {}

        # The two runs split the cores between them rather than each spreading its
        # operators over all of them and contending (unless the person chose a number).
        threads = max(1, (os.cpu_count() or 2) // 2)

        def baseline() -> None:
            try:
                runs["before"] = run_script(*unpatched, argv=argv, steps=0, timeout=timeout,
                                            stop=stop, threads=threads)
            finally:
                steps = runs["before"].steps if "before" in runs else 0
                written = limit.with_name("steps.new")
                written.write_text(str(steps + EXTRA_STEPS), encoding="utf-8")
                written.replace(limit)

        thread = threading.Thread(target=baseline, name="torchdoctor-baseline", daemon=True)
        thread.start()
        after = run_script(*patched, argv=argv, steps=0, timeout=timeout, stop=stop,
                           limit_file=limit, threads=threads)
        thread.join()
    before = runs.get("before") or Run(f"python {unpatched[0].name}", "died", 0.0,
                                       output_tail="the unpatched copy could not be started")
    return before, after


def run_script(script: Path, cwd: Path, argv: list[str], steps: int, timeout: float,
               stop: threading.Event | None = None, limit_file: Path | None = None,
               threads: int | None = None) -> Run:
    """Run a script (in the scratch copy) under the step watcher, in its own process group.

    ``stop`` (the person pressed cancel) ends the run and everything it started;
    ``limit_file`` is where the number of steps to stop at will be written when ``steps``
    is not known yet.
    """
    with tempfile.TemporaryDirectory(prefix="torchdoctor-steps-") as scratch:
        result = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "torchdoctor.patient.stepwatch", str(result),
                   str(steps), str(script), *argv]
        shown = " ".join(["python", script.name, *argv])
        env = dict(os.environ)
        package_root = str(Path(torchdoctor.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        if limit_file is not None:
            env["TORCHDOCTOR_STEP_LIMIT"] = str(limit_file)
        if threads is not None:
            env.setdefault("OMP_NUM_THREADS", str(threads))
        started = time.perf_counter()
        with open(Path(scratch) / "output", "w+b") as output:
            # A file, not a pipe: nobody has to drain it while the run is watched for stop.
            process = spawn(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=output, stderr=subprocess.STDOUT)
            ended = None
            try:
                while process.poll() is None:
                    if stop is not None and stop.is_set():
                        ended = "cancelled"
                        break
                    if time.perf_counter() - started > timeout:
                        ended = "timeout"
                        break
                    time.sleep(0.1)
            finally:
                end_group(process)  # whatever the script started goes with it
            output.seek(max(0, output.seek(0, os.SEEK_END) - OUTPUT_TAIL_CHARS * 4))
            tail = output.read().decode("utf-8", "replace")[-OUTPUT_TAIL_CHARS:]
        seconds = round(time.perf_counter() - started, 3)
        if ended is not None:
            return Run(shown, ended, seconds, None, output_tail=tail)
        try:
            outcome: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Run(shown, "died", seconds, process.returncode, output_tail=tail)
    return Run(shown, str(outcome.get("ended")), seconds, outcome.get("exit_code"),
               int(outcome.get("steps") or 0), list(outcome.get("losses") or []),
               outcome.get("error"), tail)


def judge_script(before: Run, after: Run) -> Verification:
    """Did the patch make the failure go away and the run get further?"""
    if before.ended == "cancelled":
        return Verification("cancelled", "the verification was cancelled", before, after)
    if before.ended != "raised":
        return Verification("could_not_run", "the unpatched copy did not fail "
                            f"({_ending(before)}), so a rerun cannot prove a fix", before, after)
    if after.ended == "cancelled":
        return Verification("cancelled", "the verification was cancelled", before, after)
    if after.ended == "timeout":
        return Verification("timeout", f"the patched copy ran past its budget of {after.seconds:.0f}"
                            " s without failing or reaching the step limit", before, after)
    if after.ended == "raised":
        if same_failure(before.error, after.error):
            return Verification("same_error", "the same error is still raised: "
                                f"{_error_line(after.error)}", before, after)
        return Verification("new_error", "the original error is gone, but the copy now raises "
                            f"{_error_line(after.error)}", before, after)
    if after.ended == "died":
        return Verification("new_error", f"the patched copy died ({_ending(after)})", before, after)
    further = after.ended == "steps_reached" or (after.exit_code == 0 and after.steps >= before.steps)
    if not further:
        return Verification("not_further", f"the error is gone but the copy {_ending(after)} "
                            f"after {after.steps} optimizer steps", before, after)
    return Verification("verified", f"the error is gone and the copy {_ending(after)} after "
                        f"{after.steps} optimizer steps ({before.steps} before the patch)"
                        f"{_loss_trend(after.losses)}", before, after)


def _ending(run: Run) -> str:
    if run.ended == "steps_reached":
        return "reached the step limit"
    if run.ended == "exited":
        return "exited cleanly" if run.exit_code == 0 else f"exited with status {run.exit_code}"
    if run.ended == "raised":
        return f"raised {_error_line(run.error)}"
    return run.ended


def _error_line(error: dict | None) -> str:
    if not error:
        return "an error"
    return f"{error.get('type')}: {str(error.get('message', ''))[:200]}"


def _loss_trend(losses: list) -> str:
    numbers = [x for x in losses if isinstance(x, (int, float))]
    if len(numbers) < 2:
        return ""
    return f"; loss {numbers[0]:.4g} → {numbers[-1]:.4g} over {len(numbers)} backward passes"


_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+")


def same_failure(first: dict | None, second: dict | None) -> bool:
    """Same exception type, the same message once numbers that vary (sizes, addresses)
    are set aside, and the same function in the user's code."""
    if not first or not second or first.get("type") != second.get("type"):
        return False
    if _VARYING.sub("#", str(first.get("message", ""))) != _VARYING.sub(
            "#", str(second.get("message", ""))):
        return False
    frame_a, frame_b = first.get("frame") or {}, second.get("frame") or {}
    return (Path(str(frame_a.get("file", ""))).name, frame_a.get("function")) == (
        Path(str(frame_b.get("file", ""))).name, frame_b.get("function"))
