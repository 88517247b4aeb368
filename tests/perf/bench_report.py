"""Benchmark: writing a report (target ≤ 0.5 s) and repro generation + verification (≤ 10 s).

Run: python tests/perf/bench_report.py [PROGRAM ...]

For each crashing zoo program (or those named), the script runs once in a
real patient; then the ``repro`` probe and the fresh-process verification are
timed together, and the report of the resulting session is written, timed in
this process (build + render + write) and as the whole ``torchdoctor report``
command. Figures and their ratio to the target are printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from torchdoctor.parse import parse_traceback
from torchdoctor.patient.client import PatientClient
from torchdoctor.recording import record_findings
from torchdoctor.report import build_report, render_markdown
from torchdoctor.repro import record_repro_from_patient
from torchdoctor.session import Session

ZOO = ROOT / "tests" / "zoo" / "errors"
REPORT_TARGET, REPRO_TARGET = 0.5, 10.0


def bench_program(script: Path, root: Path) -> dict | None:
    with PatientClient.start() as client:
        ran = client.run_script(str(script))
        if ran["exited"] != "raised":
            return None
        error = parse_traceback(ran["traceback"]).to_dict()
        session = Session.start(root, kind="run", target=str(script))
        session.record_input(ran["traceback"], source="script")
        record_findings(session, error, [], [])
        started = time.perf_counter()
        result = record_repro_from_patient(session, client, error, str(script))
        repro_seconds = time.perf_counter() - started
        session.close()
    directory = session.journal.directory
    started = time.perf_counter()
    (directory / "report.md").write_text(render_markdown(build_report(directory)))
    report_seconds = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torchdoctor", "report", session.id, "--root",
                    str(root)], cwd=ROOT, capture_output=True, check=True)
    command_seconds = time.perf_counter() - started
    return {"level": result.level if result.verified else "none", "lines": result.lines,
            "repro": repro_seconds, "report": report_seconds, "command": command_seconds}


def main(names: list[str]) -> int:
    programs = [ZOO / f"{n}.py" for n in names] or sorted(ZOO.glob("*.py"))
    print(f"{'program':<18} {'level':<7} {'lines':>5} {'repro s':>8} {'×10s':>5}"
          f" {'report s':>9} {'×0.5s':>6} {'cli s':>6}")
    worst_repro = worst_report = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for script in programs:
            figures = bench_program(script, Path(tmp))
            if figures is None:
                print(f"{script.stem:<18} (runs clean here; skipped)")
                continue
            worst_repro = max(worst_repro, figures["repro"])
            worst_report = max(worst_report, figures["report"])
            print(f"{script.stem:<18} {figures['level']:<7} {figures['lines']:>5}"
                  f" {figures['repro']:>8.2f} {figures['repro'] / REPRO_TARGET:>5.2f}"
                  f" {figures['report']:>9.4f} {figures['report'] / REPORT_TARGET:>6.3f}"
                  f" {figures['command']:>6.2f}")
    print(f"worst repro generation + verification: {worst_repro:.2f} s"
          f" ({worst_repro / REPRO_TARGET:.2f} of the {REPRO_TARGET:g} s target)")
    print(f"worst report writing: {worst_report * 1000:.1f} ms"
          f" ({worst_report / REPORT_TARGET:.3f} of the {REPORT_TARGET:g} s target)")
    print(f"cpu cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
