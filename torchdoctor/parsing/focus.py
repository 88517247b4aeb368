"""Cut a huge log down to the regions around its errors before parsing it line by line.

Training logs run to megabytes of progress output; the traceback is a few kilobytes.
Below the threshold the text passes through unchanged.
"""

from __future__ import annotations

import re

FOCUS_THRESHOLD = 1_000_000
ANCHOR = re.compile(r"Traceback \(most recent call last\)|[A-Za-z]Error: |Exception: "
                    r"|Assertion `|Warning: ")
BEFORE = 2_000
AFTER = 200_000


def focus_on_errors(text: str) -> str:
    """The text around error anchors (merged when they overlap), or all of a small text."""
    if len(text) <= FOCUS_THRESHOLD:
        return text
    spans: list[list[int]] = []
    for match in ANCHOR.finditer(text):
        start = max(0, match.start() - BEFORE)
        end = min(len(text), match.end() + AFTER)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return ""
    pieces = []
    for start, end in spans:
        line_start = text.rfind("\n", 0, start) + 1 if start else 0
        line_end = text.find("\n", end)
        pieces.append(text[line_start: len(text) if line_end < 0 else line_end])
    return "\n".join(pieces)
