"""Benchmark: ``torchdoctor run`` to its first verdict, against ``python script.py`` to the crash.

Target (issue 10, "Figures"): on a script that fails within its first
seconds, ``run`` shows its verdict in at most 1.5x the time plain
``python script.py`` takes to the same crash.

What is timed, from the moment the process is started (wall clock):

- plain: ``python SCRIPT`` until its traceback is printed (the last line of
  its stderr arrives), and until the process has exited (torch's teardown
  after the traceback makes that later); the target is judged against the
  earlier of the two;
- verdict: ``torchdoctor run --no-tui SCRIPT`` until the person can read the
  first verdict: the script's own output, the error and the user line that
  raised it, and the causes the knowledge base ranks for that traceback,
  ending with the line "testing N hypotheses on the failing run..." (read
  from the run's stdout as it arrives);
- full: the same process until it exits, after what comes once the verdict
  is shown: the probes that test the hypotheses on the failing run (a replay
  of the script under the recorder among them), their confirmed / rejected
  verdicts with the fix site, and the session's report with its verified
  repro (each repro candidate runs in a fresh Python).

Plain and run are alternated round by round (a busy machine slows both
alike) and the best of the rounds is kept. The verdict is checked to be the
real one: the error it names is the one plain Python printed. One more
``run --no-tui --json`` per script gives the phases of a run (its
``timings``) and the profile printed below the ratios; ``python -c "import
torch"`` is timed each round as the floor both sides pay.

The first, unrecorded run itself (at most 1.05x plain Python) is measured by
``bench_recorder.py``.
Run: ``python tests/perf/bench_run.py [--rounds N] [SCRIPT ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = 1.5
# Crashes of the families people meet most, each failing in its first seconds: a
# Linear sized for other images (shape), NumPy float64 data (dtype), a token id
# past an Embedding (an index error that needs no GPU), and an in-place residual
# add on a saved activation (autograd).
SCRIPTS = (
    "tests/zoo/errors/flatten_linear.py",
    "tests/real/linreg_numpy_float64/train.py",
    "tests/zoo/errors/embedding_index.py",
    "tests/real/resunit_inplace_residual/train.py",
)
VERDICT_END = "testing "


def environment(sessions: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(ROOT), "TORCHDOCTOR_SESSIONS": sessions,
            "PYTHONUNBUFFERED": "1"}


def plain(script: str, env: dict[str, str]) -> dict:
    """``python SCRIPT``: when its traceback's last line was printed, when it exited, and
    that line (the error)."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, script], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
    last, shown = "", None
    for line in process.stderr:  # stderr is line-buffered: each line comes as printed
        if line.strip():
            last, shown = line.strip(), time.perf_counter() - started
    process.wait()
    return {"shown": shown, "exit": time.perf_counter() - started, "error": last}


def import_torch(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], cwd=ROOT, env=env, check=True)
    return time.perf_counter() - started


def run_text(script: str, env: dict[str, str]) -> dict:
    """``run --no-tui``: when the verdict's last line arrived, when the process ended."""
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "torchdoctor", "run", "--no-tui", script],
            stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT, env=env, text=True)
        lines, verdict = [], None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if verdict is None and line.startswith(VERDICT_END):
                verdict = time.perf_counter() - started
        process.wait()
        full = time.perf_counter() - started
    raised = next((line for line in lines if line.startswith("torchdoctor: ")
                   and " raised " in line), "")
    return {"verdict": verdict, "full": full, "raised": raised, "lines": lines,
            "confirmed": any(line.startswith("confirmed: ") for line in lines)}


def run_json(script: str, env: dict[str, str]) -> dict:
    began = time.time()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--no-tui", "--json",
                           script], capture_output=True, text=True, cwd=ROOT, env=env,
                          check=False)
    total = time.perf_counter() - started
    outcome = json.loads(done.stdout)
    return {"total": total, "startup": outcome["timings"]["began_at"] - began,
            "timings": outcome["timings"], "findings": outcome["findings"]}


def same_error(plain_line: str, raised_line: str) -> bool:
    """``RuntimeError: mat1 ...`` (python) against ``torchdoctor: x.py raised RuntimeError:
    mat1 ...`` (the verdict), compared on the type and the message's first 60 characters."""
    _, _, named = raised_line.partition(" raised ")
    return bool(plain_line) and named[:60] == plain_line[:60]


def profile(name: str, best_json: dict) -> list[str]:
    """Where a run's time went, phase by phase (seconds, from the ``--json`` run)."""
    t = best_json["timings"]
    findings = t.get("findings") or []
    phases = [
        ("doctor start-up (python, torchdoctor's imports)", best_json["startup"]),
        ("patient ready (torch imported; session and knowledge base meanwhile)",
         t["patient_ready"]),
        ("the script, to its crash", t["script_ended"] - t["patient_ready"]),
        ("diagnosis of the traceback", t["diagnosed"] - t["script_ended"]),
        ("first probe result (a replay under the recorder when a probe needs one)",
         (findings[0] if findings else t["tested"]) - t["diagnosed"]),
        (f"the other {max(len(findings) - 1, 0)} probe results",
         t["tested"] - (findings[0] if findings else t["tested"])),
        ("session report and verified repro", t["finished"] - t["tested"]),
        ("output and exit", best_json["total"] - best_json["startup"] - t["finished"]),
    ]
    lines = [f"  {name}: --json run {best_json['total']:.2f} s"]
    lines += [f"    {label:<75} {seconds:6.2f} s" for label, seconds in phases]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds (best kept)")
    parser.add_argument("scripts", nargs="*", default=list(SCRIPTS),
                        help="scripts that crash, relative to the repository")
    args = parser.parse_args()
    sessions = tempfile.mkdtemp(prefix="bench-run-sessions-")
    env = environment(sessions)
    best: dict[str, dict] = {s: {} for s in args.scripts}
    floor = []
    problems = []
    import_torch(env)  # warm the file cache for every side alike
    for _ in range(args.rounds):
        floor.append(import_torch(env))
        for script in args.scripts:
            python = plain(script, env)
            text = run_text(script, env)
            record = best[script]
            for key, seconds in (("plain", python["exit"]), ("shown", python["shown"]),
                                 ("full", text["full"])):
                record[key] = min(record.get(key, seconds), seconds)
            if text["verdict"] is None:
                problems.append(f"{script}: no verdict line in\n  " + "\n  ".join(text["lines"]))
                continue
            record["verdict"] = min(record.get("verdict", text["verdict"]), text["verdict"])
            if not same_error(python["error"], text["raised"]):
                problems.append(f"{script}: the verdict names {text['raised']!r}, python"
                                f" printed {python['error']!r}")
            record["confirmed"] = text["confirmed"]
    for script in args.scripts:
        best[script]["json"] = run_json(script, env)

    print(f"torchdoctor run to its first verdict vs python SCRIPT to the crash"
          f" (best of {args.rounds}, alternated)")
    print("  verdict = the script's output, the error and its line, the ranked causes;"
          " after it come the probes' verdicts and the session's verified repro (full)")
    print(f"  python -c 'import torch' (the floor both pay): {min(floor):.2f} s")
    ratios, strict, full_ratios = [], [], []
    for script in args.scripts:
        record = best[script]
        if "verdict" not in record:
            continue
        ratios.append(record["verdict"] / record["plain"])
        strict.append(record["verdict"] / record["shown"])
        full_ratios.append(record["full"] / record["plain"])
        print(f"  {script}: python {record['shown']:.2f} s to its traceback,"
              f" {record['plain']:.2f} s to its exit; run: verdict {record['verdict']:.2f} s"
              f" ({strict[-1]:.2f}x the traceback, {ratios[-1]:.2f}x the exit),"
              f" full {record['full']:.2f} s ({full_ratios[-1]:.2f}x the exit)"
              f"{', cause confirmed' if record.get('confirmed') else ', nothing confirmed'}")
    worst = max(strict) if strict else float("inf")
    print(f"overall: verdict {worst:.2f}x python's traceback at worst,"
          f" {sum(strict) / max(len(strict), 1):.2f}x mean (target <= {TARGET}x);"
          f" {max(ratios, default=0):.2f}x python's exit at worst;"
          f" full run {max(full_ratios, default=0):.2f}x python's exit at worst")
    print("where the time goes (one run --no-tui --json per script):")
    for script in args.scripts:
        for line in profile(script, best[script]["json"]):
            print(line)
    for problem in problems:
        print(f"PROBLEM {problem}")
    ok = worst <= TARGET and not problems
    print("target met" if ok else "target NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
