"""How often torchdoctor fix proves a patch, and what it costs next to the failing run.

    python tests/perf/bench_fix.py [--real]

For each crash program in tests/zoo/errors (and tests/real with --real) it
runs ``torchdoctor run``, then ``torchdoctor fix``, and for each
silent-failure harness in tests/zoo/silent ``torchdoctor check`` then
``fix``. It prints per program whether a verified patch came out, then the
shares, and the ratio of the time from confirmed cause to verified fix to
the script's own time to its failure (plain ``python script.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "zoo"
HEALTHY = {"healthy_cnn", "healthy_mlp", "healthy_transformer", "hanging_dataset",
           "lambda_spawn_loader"}
NEEDS_CUDA = {"device_mismatch"}


def torchdoctor(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHDOCTOR_SESSIONS": str(cwd / ".sessions"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def one(kind: str, source: Path) -> tuple[bool, float, float]:
    """(verified, seconds to a verified fix, seconds of the plain failing run)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        shutil.copytree(source.parent, folder, dirs_exist_ok=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, source.name], cwd=folder, capture_output=True,
                       timeout=600)
        plain = time.perf_counter() - started
        if kind == "crash":
            torchdoctor(["run", "--no-tui", source.name], folder)
        else:
            torchdoctor(["check", f"{source.name}:harness"], folder)
        started = time.perf_counter()
        done = torchdoctor(["fix", "--json"], folder)
        seconds = time.perf_counter() - started
        try:
            patches = json.loads(done.stdout)["patches"]
        except (ValueError, KeyError):
            patches = []
        verified = [p for p in patches if p["verified"]]
        what = verified[0]["what"] if verified else (patches[0]["reason"] or patches[0]["what"]
                                                     if patches else "no confirmed cause")
        print(f"  {'✓' if verified else '✗'} {kind:6} {source.stem:28} {seconds:6.1f} s  {what}")
        return bool(verified), seconds, plain


def main() -> None:
    crashes = sorted(p for p in (ZOO / "errors").glob("*.py") if p.stem not in NEEDS_CUDA)
    if "--real" in sys.argv:
        crashes += sorted((ROOT / "tests" / "real").glob("*/train.py"))
    silent = sorted(p for p in (ZOO / "silent").glob("*.py") if p.stem not in HEALTHY)
    results = {"crash": [one("crash", p) for p in crashes],
               "silent": [one("silent", p) for p in silent]}
    for kind, rows in results.items():
        share = sum(r[0] for r in rows) / len(rows) if rows else 0.0
        print(f"{kind}: verified patch for {sum(r[0] for r in rows)}/{len(rows)} = {share:.0%}")
    ratios = [r[1] / r[2] for r in results["crash"] if r[0] and r[2] > 0]
    if ratios:
        ratios.sort()
        print(f"crash: fix time / plain failing run, median {ratios[len(ratios) // 2]:.2f}x, "
              f"max {ratios[-1]:.2f}x (includes patient starts)")


if __name__ == "__main__":
    main()
