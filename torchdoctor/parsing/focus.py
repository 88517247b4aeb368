"""Cut a huge log down to the regions around its errors before parsing it line by line.

Training logs run to megabytes of progress output; the traceback is a few kilobytes.
Anchors are found with ``str.find`` (a fast byte scan) rather than a regex, tracebacks
are preferred over loose ``Error:`` lines, and the kept text has a fixed budget, taken
from the first anchors on, because the first failure is the one diagnosed.
Below the threshold the text passes through unchanged.
"""

from __future__ import annotations

FOCUS_THRESHOLD = 1_000_000
BUDGET = 1_000_000
STRONG_ANCHORS = ("Traceback (most recent call last)",)
WEAK_ANCHORS = ("Error: ", "Exception: ", "Error\n", "Assertion `")
MOST_ANCHORS = 2_000
BEFORE = 4_000
AFTER = 200_000


def _anchor_positions(text: str, needles: tuple[str, ...]) -> list[int]:
    positions: list[int] = []
    for needle in needles:
        start = text.find(needle)
        while start >= 0 and len(positions) < MOST_ANCHORS:
            positions.append(start)
            start = text.find(needle, start + len(needle))
    return sorted(positions)


def _line_boundary_before(text: str, position: int) -> int:
    """The start of the line holding ``position``, looking back no further than BEFORE."""
    floor = max(0, position - BEFORE)
    boundary = max(text.rfind("\n", floor, position), text.rfind("\r", floor, position))
    return boundary + 1 if boundary >= 0 else position


def focus_on_errors(text: str) -> str:
    """The text around error anchors, merged where they overlap, or all of a small text."""
    if len(text) <= FOCUS_THRESHOLD:
        return text
    anchors = _anchor_positions(text, STRONG_ANCHORS) or _anchor_positions(text, WEAK_ANCHORS)
    pieces: list[str] = []
    kept = 0
    last_end = -1
    for anchor in anchors:
        start = max(0, anchor - BEFORE, last_end)
        end = min(len(text), anchor + AFTER)
        if end <= start:
            continue
        line_start = _line_boundary_before(text, start) if start > last_end else start
        line_end = text.find("\n", end, end + BEFORE)
        line_end = min(len(text), end + BEFORE) if line_end < 0 else line_end
        piece = text[line_start:line_end]
        if kept + len(piece) > BUDGET:
            piece = piece[: BUDGET - kept]
        pieces.append(piece)
        kept += len(piece)
        last_end = line_end
        if kept >= BUDGET:
            break
    return "\n".join(pieces)
