"""How fast the traceback parser is: median per fixture paste, and a 10 MB training log.

Run: ``python tests/perf/bench_parse.py``. Targets: a typical paste well under 5 ms,
a 10 MB log under 1 s. The ratio to ``python -c "import torch"`` shows why the doctor
side must never import torch.
"""

from __future__ import annotations

import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from torchdoctor.parse import parse_traceback

PASTES = REPO / "tests" / "fixtures" / "pastes"
LOG_TARGET_S = 1.0
PASTE_TARGET_MS = 5.0


def seconds(call, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def synthetic_log(size: int) -> str:
    """Timestamped records, tqdm bars and a warning, with the real traceback at the end."""
    rows = []
    total = 0
    step = 0
    while total < size:
        if step % 3:
            row = (f"2024-05-01 12:{step // 60 % 60:02d}:{step % 60:02d},123 INFO epoch "
                   f"{step // 1000} step {step} loss {2.3 - step * 1e-7:.4f} lr 0.001\n")
        else:
            row = f"Epoch {step // 1000}: {step % 100:3d}%|####  | {step % 782}/782 [00:05]\r"
        rows.append(row)
        total += len(row)
        step += 1
    return "".join(rows) + (PASTES / "real_dataloader_worker.txt").read_text()


def main() -> None:
    pastes = sorted(PASTES.glob("*.txt"))
    medians = {}
    for path in pastes:
        text = path.read_text(encoding="utf-8")
        medians[path.name] = statistics.median(seconds(lambda t=text: parse_traceback(t), 50))
    overall_ms = statistics.median(medians.values()) * 1000
    slowest = max(medians, key=medians.get)
    print(f"fixtures: {len(pastes)} pastes, median {overall_ms:.3f} ms, slowest "
          f"{slowest} {medians[slowest] * 1000:.3f} ms (target {PASTE_TARGET_MS} ms)")

    log = synthetic_log(10_000_000)
    log_s = statistics.median(seconds(lambda: parse_traceback(log), 5))
    parsed = parse_traceback(log)
    print(f"10 MB log: {len(log) / 1e6:.1f} MB in {log_s * 1000:.1f} ms "
          f"(target {LOG_TARGET_S * 1000:.0f} ms, {log_s / LOG_TARGET_S:.2%} of it); "
          f"found {parsed.type}: {parsed.message[:50]}")

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    torch_s = time.perf_counter() - start
    print(f'python -c "import torch": {torch_s * 1000:.0f} ms; a paste parses '
          f"{torch_s * 1000 / overall_ms:.0f}x faster, the 10 MB log {torch_s / log_s:.1f}x")


if __name__ == "__main__":
    main()
