"""How often torchdoctor fix proves a patch, and what it costs next to the failing run.

    python tests/perf/bench_fix.py [--real] [--only NAME[,NAME...]] [--jobs N]

For each crash program in tests/zoo/errors (and tests/real with --real) it
times the plain failing run (``python script.py``), runs ``torchdoctor
run``, then times ``torchdoctor fix``; for each silent-failure harness in
tests/zoo/silent (and tests/real) ``torchdoctor check`` then ``fix``.

It prints per program whether a verified patch came out, and the shares:

- the session's own confirmed causes, as a user gets them: this depends on
  how often the investigation confirms the right cause;
- for the real-world set, "given the expected cause": the cause and fix
  line each case.yaml names, taken as confirmed (with the facts the
  session gathered), so the coverage of the rewrites shows apart from
  confirmation. A case whose cause the knowledge base lacks counts as not
  covered.

And, per crash program with a verified fix, the time from confirmed cause
to verified fix against its budget: twice the plain run to the failure,
plus one patient start, all measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from torchdoctor.fixes.attempts import propose, verify_proposals
from torchdoctor.fixes.causes import Site, session_cause
from torchdoctor.journal import find_session
from torchdoctor.knowledge import load_knowledge
from torchdoctor.patient.client import PatientClient

ZOO = ROOT / "tests" / "zoo"
REAL = ROOT / "tests" / "real"
HEALTHY = {"healthy_cnn", "healthy_mlp", "healthy_transformer", "hanging_dataset",
           "lambda_spawn_loader"}
NEEDS_CUDA = {"device_mismatch"}


@dataclass
class Program:
    kind: str  # crash | silent
    family: str  # zoo | real
    folder: Path
    file: str  # the script, or the harness's file
    harness: str = ""  # the harness's function, for a silent program
    case: dict | None = None

    @property
    def name(self) -> str:
        return self.folder.name if self.family == "real" else Path(self.file).stem


@dataclass
class Outcome:
    program: Program
    verified: bool
    what: str
    fix_seconds: float
    plain_seconds: float
    given: bool | None = None  # verified given the expected cause (real cases)
    given_what: str = ""


def torchdoctor(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHDOCTOR_SESSIONS": str(cwd / ".sessions"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def programs(real: bool) -> list[Program]:
    found = [Program("crash", "zoo", ZOO / "errors", p.name)
             for p in sorted((ZOO / "errors").glob("*.py")) if p.stem not in NEEDS_CUDA]
    found += [Program("silent", "zoo", ZOO / "silent", p.name, "harness")
              for p in sorted((ZOO / "silent").glob("*.py")) if p.stem not in HEALTHY]
    if real:
        for case_file in sorted(REAL.glob("*/case.yaml")):
            case = yaml.safe_load(case_file.read_text(encoding="utf-8"))
            file, _, name = str(case["target"]).partition(":")
            found.append(Program(case["kind"], "real", case_file.parent, file, name, case))
    return found


def patient_start_seconds() -> float:
    started = time.perf_counter()
    with PatientClient.start(cwd=str(ROOT)):
        pass
    return time.perf_counter() - started


def one(program: Program, kb) -> Outcome:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / program.folder.name
        shutil.copytree(program.folder, folder)
        plain = 0.0
        if program.kind == "crash":
            started = time.perf_counter()
            subprocess.run([sys.executable, program.file], cwd=folder, capture_output=True,
                           timeout=600, check=False)
            plain = time.perf_counter() - started
            torchdoctor(["run", "--no-tui", program.file], folder)
        else:
            torchdoctor(["check", f"{program.file}:{program.harness}"], folder)
        started = time.perf_counter()
        done = torchdoctor(["fix", "--json"], folder)
        seconds = time.perf_counter() - started
        try:
            patches = json.loads(done.stdout)["patches"]
        except (ValueError, KeyError):
            patches = []
        verified = [p for p in patches if p["verified"]]
        what = verified[0]["what"] if verified else (
            (patches[0]["reason"] or patches[0]["what"]) if patches else "no confirmed cause")
        outcome = Outcome(program, bool(verified), what, seconds, plain)
        if program.case is not None:
            outcome.given, outcome.given_what = given_expected(program, folder, verified, kb)
    return outcome


def given_expected(program: Program, folder: Path, verified: list[dict], kb
                   ) -> tuple[bool, str]:
    """A verified patch when the session takes the case's expected cause and fix line."""
    expected = program.case["expected"]
    if not expected.get("entry"):
        return False, "the knowledge base has no entry for this cause"
    key = f"{expected['entry']}/{expected['hypothesis']}"
    if any(f"{p['entry']}/{p['hypothesis']}" == key for p in verified):
        return True, "(as the session's own)"
    directory = Path(find_session("", str(folder / ".sessions")))
    cause = session_cause(directory, key)
    fix_line, raised = expected["fix_line"], program.case.get("raised_line")
    cause.site = Site(str(folder / fix_line["file"]), fix_line["line"], "fix")
    if raised:
        cause.raised = Site(str(folder / raised["file"]), raised["line"], "raised")
    if program.kind == "silent" and cause.check is None:
        entry = kb.by_id[expected["entry"]]
        hypothesis = next(h for h in entry.hypotheses if h.id == expected["hypothesis"])
        cause.check = hypothesis.probe
    target, proposals = propose(directory, kb, causes=[cause])
    if target is None:
        return False, "the session names no target"
    attempts = verify_proposals(target, proposals)
    good = [a for a in attempts if a.verified]
    if good:
        return True, good[0].patch.what
    last = attempts[-1] if attempts else None
    if last is None:
        return False, "no rewrite"
    return False, last.reason or f"{last.verification.verdict}: {last.patch.what}"


def share(rows: list[bool]) -> str:
    return f"{sum(rows)}/{len(rows)} = {sum(rows) / len(rows):.0%}" if rows else "none"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real", action="store_true", help="also the real-world set")
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--jobs", type=int, default=1,
                        help="programs at once (each one's fix is timed against its own plain "
                        "run, under the same load)")
    args = parser.parse_args()
    kb = load_knowledge()
    start = patient_start_seconds()
    print(f"one patient start: {start:.1f} s")
    only = {n for n in args.only.split(",") if n}
    chosen = [p for p in programs(args.real) if not only or p.name in only]
    outcomes = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for outcome in pool.map(lambda program: one(program, kb), chosen):
            outcomes.append(outcome)
            show(outcome, start)
    summarise(outcomes, start)


def show(outcome: Outcome, start: float) -> None:
    program = outcome.program
    budget = 2 * outcome.plain_seconds + start
    timing = (f"{outcome.fix_seconds:5.1f} s / budget {budget:5.1f} s = "
              f"{outcome.fix_seconds / budget:4.2f}" if program.kind == "crash"
              else f"{outcome.fix_seconds:5.1f} s")
    given = "" if outcome.given is None else (
        f"  | given cause {'✓' if outcome.given else '✗'} {outcome.given_what}")
    print(f"  {'✓' if outcome.verified else '✗'} {program.family:4} {program.kind:6} "
          f"{program.name:34} {timing}  {outcome.what}{given}", flush=True)


def summarise(outcomes: list[Outcome], start: float) -> None:
    print()
    for family in ("zoo", "real"):
        for kind in ("crash", "silent"):
            rows = [o for o in outcomes if o.program.family == family and o.program.kind == kind]
            if not rows:
                continue
            print(f"{kind} ({family}): verified patch for the session's confirmed cause "
                  f"{share([o.verified for o in rows])}")
            if family == "real":
                print(f"{kind} ({family}): verified patch given the expected cause and fix "
                      f"line {share([bool(o.given) for o in rows])}")
    timed = [o for o in outcomes if o.program.kind == "crash" and o.verified]
    if timed:
        ratios = [o.fix_seconds / (2 * o.plain_seconds + start) for o in timed]
        print(f"crash: confirmed cause → verified fix within 2 × the plain run to the failure "
              f"+ one patient start for {share([r <= 1 for r in ratios])} "
              f"(ratio median {statistics.median(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
