"""How fast the app paints, and whether typing stays responsive while a probe runs.

    python tests/perf/bench_tui.py

Targets: command to first painted screen <= 0.5 s (torch is never imported
by the app); a key typed while a real probe runs in a real patient is
handled in well under 100 ms.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def first_paint(runs: int = 5) -> list[float]:
    """From launching ``python -m torchdoctor`` (in a pty) to the app's first paint.

    The app writes the wall clock at its first paint to the file named by
    ``TORCHDOCTOR_EXIT_AFTER_PAINT`` and exits, so shutdown is not counted.
    """
    marker = Path(tempfile.mkdtemp(prefix="td-bench-")) / "painted"
    env = dict(os.environ, TORCHDOCTOR_EXIT_AFTER_PAINT=str(marker),
               TORCHDOCTOR_SESSIONS=str(marker.parent / "sessions"), TERM="xterm-256color")
    times = []
    for _ in range(runs):
        start = time.time()
        subprocess.run(["script", "-qec", f"{sys.executable} -m torchdoctor", "/dev/null"],
                       cwd=ROOT, env=env, capture_output=True, check=True, timeout=60)
        times.append(float(marker.read_text()) - start)
    return times


def bare_python(runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return times


async def typing_while_probing() -> tuple[list[float], list[float]]:
    """Per-key latency in the intake paste area, idle and while overfit_batch runs."""
    from torchdoctor import demo
    from torchdoctor.investigation.walk import Target, default_client_factory
    from torchdoctor.session import Session
    from torchdoctor.tui.app import TorchDoctorApp
    from torchdoctor.tui.screens.intake import IntakeScreen

    copy = demo.prepare()
    demo.apply_fix(copy.script)
    session = Session.start(Path(tempfile.mkdtemp()) / "sessions")
    target = Target(script=str(copy.script), harness=copy.harness)
    app = TorchDoctorApp(session, default_client_factory(str(copy.directory)), target)

    async def keys(pilot, count: int) -> list[float]:
        latencies = []
        for _ in range(count):
            start = time.perf_counter()
            await pilot.press("x")
            latencies.append(time.perf_counter() - start)
        return latencies

    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5")
        app.push_screen(IntakeScreen(app.doctor))
        await pilot.pause()
        idle = await keys(pilot, 20)
        app.run_step("fix", "rerunning and overfitting")  # patient start + overfit_batch
        await asyncio.sleep(1.0)
        busy = await keys(pilot, 40)
        assert app.busy, "the probe ended before the typing was measured"
        app.doctor.cancel()
        await app.workers.wait_for_complete()
    return idle, busy


def main() -> None:
    bare = statistics.median(bare_python())
    paint = first_paint()
    print(f"bare python start:            median {bare * 1000:7.1f} ms")
    print(f"command to first paint:       median {statistics.median(paint) * 1000:7.1f} ms"
          f"  (max {max(paint) * 1000:.1f} ms; target <= 500 ms)")
    print(f"  ratio to bare python:       {statistics.median(paint) / bare:.1f}x")
    idle, busy = asyncio.run(typing_while_probing())
    print(f"key latency, idle:            median {statistics.median(idle) * 1000:7.1f} ms")
    print(f"key latency, probe running:   median {statistics.median(busy) * 1000:7.1f} ms"
          f"  (max {max(busy) * 1000:.1f} ms)")
    print(f"  ratio busy / idle:          {statistics.median(busy) / statistics.median(idle):.2f}x")


if __name__ == "__main__":
    main()
