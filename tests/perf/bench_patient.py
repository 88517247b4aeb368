"""Patient start-up: start + first ``hello`` reply versus ``python -c "import torch"``.

Target: the patient answers its first request in at most 2x the time of a
bare torch import (it imports torch once and loads probe modules lazily).
Run: ``python tests/perf/bench_patient.py [repeats]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from torchdoctor.patient.client import PatientClient

TARGET_RATIO = 2.0


def time_bare_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def time_patient_hello() -> float:
    started = time.perf_counter()
    client = PatientClient.start()
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    time_bare_import()  # warm the file cache for both
    bare = [time_bare_import() for _ in range(repeats)]
    patient = [time_patient_hello() for _ in range(repeats)]
    bare_median, patient_median = statistics.median(bare), statistics.median(patient)
    ratio = patient_median / bare_median
    print(f"python -c 'import torch'      median {bare_median:.3f} s  (n={repeats})")
    print(f"patient start + first hello   median {patient_median:.3f} s  (n={repeats})")
    print(f"ratio {ratio:.2f}x  (target <= {TARGET_RATIO:.1f}x): "
          f"{'ok' if ratio <= TARGET_RATIO else 'OVER TARGET'}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
