"""Benchmark: the whole default checkup on a small CNN, and each probe's cost.

Run as ``python tests/perf/bench_check.py``. Prints the wall time of
``torchdoctor check`` (target: 20 s on a 2-core machine) and, in-process, each
probe's time as a multiple of one bare training step of the same harness.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
HARNESS = ROOT / "tests" / "zoo" / "silent" / "healthy_cnn.py"
TARGET_SECONDS = 20.0


def load_context():
    from torchdoctor.patient.context import ProbeContext

    spec = importlib.util.spec_from_file_location("bench_healthy_cnn", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return ProbeContext(**module.harness())


def bare_step_seconds(repeats: int = 30) -> float:
    ctx = load_context()
    ctx.step()
    start = time.perf_counter()
    for _ in range(repeats):
        ctx.step()
    return (time.perf_counter() - start) / repeats


def probe_costs(step: float) -> None:
    from torchdoctor.investigation.checkup import CHECK_ORDER
    from torchdoctor.patient.probes import run_probe

    print(f"one bare training step: {step * 1000:.1f} ms")
    print(f"{'probe':<16} {'seconds':>8} {'× step':>8}")
    for name in CHECK_ORDER:
        ctx = load_context()
        start = time.perf_counter()
        result = run_probe(name, ctx, {})
        took = time.perf_counter() - start
        print(f"{name:<16} {took:8.3f} {took / step:8.0f}  {result['status']}")


def whole_checkup() -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", f"{HARNESS}:harness"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    print(done.stdout.rstrip())
    print(f"whole checkup (patient start included): {took:.1f} s, "
          f"{took / TARGET_SECONDS:.2f} of the {TARGET_SECONDS:g} s target, exit {done.returncode}")
    return took


if __name__ == "__main__":
    probe_costs(bare_step_seconds())
    seconds = whole_checkup()
    sys.exit(0 if seconds <= TARGET_SECONDS else 1)
