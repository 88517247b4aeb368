"""Benchmark: how often torchdoctor gets real users' bugs right (the set in ``tests/real/``).

Run as ``python tests/perf/bench_real.py [CASE ...]``. Each case goes through the
real CLI (``run`` for a crash, ``check`` for a silent failure), two at a time.
Prints one line per case (category right, cause confirmed, fix line named,
true cause rejected, wrong confirmations, and what went wrong), then the
shares the issue sets targets for: cause confirmed and fix line named on
≥ 90 % of the programs, no wrong confirmation, no rejection of the true cause.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from real_cases import Figures, judge, load_cases, run_all

TARGET_ALL_THREE = 0.90


def share(count: int, total: int) -> str:
    return f"{count:3d}/{total} = {100 * count / total:5.1f} %"


def main(names: list[str]) -> None:
    cases = [case for case in load_cases() if not names or case.name in names]
    start = time.perf_counter()
    outcomes = run_all(cases)
    took = time.perf_counter() - start
    judgements = [judge(outcomes[case.name]) for case in cases]
    print(f"{'case':<36} kind   cat cause fix  rej wrong  notes")
    for j in judgements:
        mark = lambda ok: " ✓ " if ok else " · "
        print(f"{j.case.name:<36} {j.case.kind:<6}{mark(j.category_right)}{mark(j.confirmed)}  "
              f"{mark(j.fix_named)}{' ✗ ' if j.rejected else '   '}{len(j.wrong):4d}   {j.note}")
    figures = Figures.of(judgements)
    total = figures.total
    print()
    print(f"right category            {share(figures.category_right, total)}")
    print(f"cause confirmed           {share(figures.confirmed, total)}")
    print(f"fix line named            {share(figures.fix_named, total)}")
    print(f"all three                 {share(figures.all_three, total)}"
          f"   (target ≥ {TARGET_ALL_THREE:.0%})")
    print(f"wrong confirmations       {figures.wrong_confirmations:3d} on {figures.with_wrong} programs"
          f"   (target 0)")
    print(f"true cause rejected       {share(figures.rejections, total)}   (target 0)")
    print(f"{total} programs in {took:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
