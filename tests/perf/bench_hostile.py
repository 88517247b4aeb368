"""``torchdoctor diagnose`` as a whole process on hostile input, against the 2 s bound.

    python tests/perf/bench_hostile.py

Prints the wall time of one process per case (the cases of docs/reliability.md,
"Bounded time and memory on any input"), with the target beside each.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.test_hostile_input import HOSTILE, OSC8_PASTE

TARGET = 2.0
FIXTURE = ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt"


def seconds(args: list[str], stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=ROOT, input=stdin,
                   capture_output=True, check=False, timeout=120)
    return time.perf_counter() - start


def main() -> None:
    cases: dict[str, tuple[list[str], bytes | None]] = {
        name: (["diagnose", "-"], text.encode()) for name, text in HOSTILE.items()}
    cases["/dev/zero"] = (["diagnose", "/dev/zero"], None)
    cases["traceback + 100 KB of NUL"] = (["diagnose", "-"],
                                          FIXTURE.read_bytes() + b"\0" * 100_000)
    cases["OSC-8 hyperlinks"] = (["diagnose", "-"], OSC8_PASTE.encode())
    colourful = b"".join(b"\x1b[32mstep %d\x1b[0m loss 0.5\n" % i for i in range(400_000))
    cases["9 MB colourful log, error at the end"] = (["diagnose", "-"],
                                                     colourful + FIXTURE.read_bytes())
    seconds(["diagnose", str(FIXTURE)])  # warm the knowledge-base cache
    print(f"{'case':<48}{'figure':>9}  target")
    for name, (args, stdin) in cases.items():
        print(f"{name:<48}{seconds(args, stdin):>7.2f} s  <= {TARGET:.0f} s")


if __name__ == "__main__":
    main()
