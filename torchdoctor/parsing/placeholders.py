"""Placeholders people type where torch printed a value.

A report keeps torch's wording and blanks what changes from run to run or what
the person would rather not show: "DataLoader worker (pid XXX) is killed by
signal", "(pid ...)", 'Unexpected key(s) in state_dict: "module.xxx"',
"expected input[N, C] ...", "<n>". The wording is the evidence; the blanked
value never was. The knowledge base's patterns capture those values (``\\d+``,
``[^"]+``), so a message with a placeholder in their place is read once more
with a plain value put there, and what the pattern captured from a filled place
is dropped: it is no value torch printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The value put in a placeholder's place: a number, which every value pattern of a
# message (a count, a size, a pid, a name's last part) accepts.
_VALUE = "2"
_BLANK = re.compile(
    # XXX / xxx as a whole word or a name's last part ("module.XXX").
    r"(?P<blank>(?<![A-Za-z0-9_])(?:[Xx]{2,}|N{3,})(?![A-Za-z0-9_])"
    # An ellipsis standing alone for a value: "(pid ...)", "[..., 3]", "pid(s) …)".
    r"|(?<=[\s(\[,=:])(?:\.{3}|…)(?=[)\],])"
    # A named blank in angle brackets: "<n>", "<pid>", "<N>".
    r"|<(?:[nNkK]|num|number|pid|id|idx|index|int|size|dim|value)>)"
    # A shape written with letters for its sizes: "[N, C]", "(B, T, C)", "[N, 3, H, W]".
    r"|(?P<shape>(?<=[\[(])(?:[A-Z]|\d{1,9})(?:, ?(?:[A-Z]|\d{1,9})){1,7}(?=[\])]))"
)
_SIZE_LETTER = re.compile(r"\b[A-Z]\b")


@dataclass(frozen=True)
class Filled:
    """A message with a value in each placeholder's place, and where those values are."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def covers(self, start: int, end: int) -> bool:
        """Whether the text from ``start`` to ``end`` holds a value this filling put there."""
        return any(start < fill_end and fill_start < end for fill_start, fill_end in self.spans)


def filled(message: str) -> Filled | None:
    """``message`` with a value in each placeholder's place, or None when it has none."""
    parts, spans, length, position = [], [], 0, 0
    for found in _BLANK.finditer(message):
        token = found.group(0)
        value = _VALUE if found.lastgroup == "blank" else _SIZE_LETTER.sub(_VALUE, token)
        if value == token:
            continue  # a shape of numbers only is what torch printed
        before = message[position:found.start()]
        parts += [before, value]
        length += len(before)
        spans.append((length, length + len(value)))
        length += len(value)
        position = found.end()
    if not spans:
        return None
    parts.append(message[position:])
    return Filled("".join(parts), tuple(spans))
