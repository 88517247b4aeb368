"""Rich's boxed traceback (``rich.traceback``, used by many training CLIs) as plain lines.

Rich draws the traceback inside a box: ``╭── Traceback (most recent call last) ──╮``,
every line between ``│`` borders, each frame as ``/path/file.py:271 in main`` (a long
path wrapped before its line number), the source around it with a ``❱`` on the line
that ran and ``│`` indentation guides. Those lines are rewritten in IPython 8's form
(``File /path/file.py:271, in main`` and ``--> 271 code``), which the scanner reads with
its source lines; the exception line Rich prints under the box needs nothing.
"""

from __future__ import annotations

import re

BORDER = "│"
RICH_FRAME = re.compile(r"(?P<file>\S.*?\.pyx?):(?P<line>\d{1,9}) in (?P<func>\S+)")
# A frame line too long for the box wraps after its path, its line number or "in".
WRAPPED_FRAME = re.compile(r"\S.*?\.pyx?:(?:\d{1,9}(?: in)?)?")


def is_boxed(lines: list[str]) -> bool:
    """Whether a paste holds a Rich box: its top corner with the header, or framed lines."""
    return any(line.lstrip().startswith(("╭", BORDER)) for line in lines[:20_000])


def unbox(lines: list[str]) -> list[str]:
    """The paste's lines with every Rich box line rewritten; others are left alone."""
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("╭") and "Traceback (most recent call last)" in stripped:
            out.append("Traceback (most recent call last):")
            continue
        if stripped.startswith("╰") or (stripped[:1] == "╭" and set(stripped) <= set("╭─╮ ")):
            out.append("")
            continue
        if not (stripped.startswith(BORDER) and stripped.endswith(BORDER) and len(stripped) > 1):
            out.append(line)
            continue
        inner = stripped[1:-1].strip()
        previous = out[-1][len("File "):] if out and out[-1].startswith("File ") else ""
        if previous and WRAPPED_FRAME.fullmatch(previous):
            joined = previous + ("" if previous.endswith(":") else " ") + inner
            if RICH_FRAME.fullmatch(joined):
                out[-1] = "File " + joined
                inner = ""
        out.append(_rewrite(inner))
    return [_frame(line) for line in out]


def _rewrite(inner: str) -> str:
    if WRAPPED_FRAME.fullmatch(inner) or RICH_FRAME.fullmatch(inner):
        return "File " + inner
    if inner.startswith("❱"):
        return "--> " + inner[1:].replace(BORDER, " ").strip()
    return inner.replace(BORDER, " ").strip()


def _frame(line: str) -> str:
    """``File /path.py:271 in main`` → IPython 8's ``File /path.py:271, in main``."""
    if not line.startswith("File "):
        return line
    found = RICH_FRAME.fullmatch(line[len("File "):])
    if not found:
        return line
    return f"File {found['file']}:{found['line']}, in {found['func']}"
