"""Where a command's time went: the moment each phase ended, since the command began.

``torchdoctor run --json`` carries it (``timings``), so a person can tell the
script's own seconds from torchdoctor's, and ``tests/perf/bench_run.py``
prints it phase by phase. ``began_at`` is the wall-clock start, so another
process that started the command can place these moments on its own clock.
"""

from __future__ import annotations

import time
from typing import Any


class Timeline:
    """Phase ends in seconds since construction; a phase that repeats keeps every end."""

    def __init__(self) -> None:
        self.began_at = time.time()
        self._start = time.perf_counter()
        self.marks: dict[str, Any] = {}

    def mark(self, phase: str) -> None:
        self.marks[phase] = self._now()

    def add(self, phase: str) -> None:
        """One more end of a repeating phase (each finding as it is judged)."""
        self.marks.setdefault(phase, []).append(self._now())

    def to_dict(self) -> dict:
        return {"began_at": round(self.began_at, 4), **self.marks}

    def _now(self) -> float:
        return round(time.perf_counter() - self._start, 4)
