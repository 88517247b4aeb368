"""A traceback whose line breaks were lost on the way to the page, set back on its lines.

Some forums, chat boxes and issue forms join a pasted traceback into one line:
``Traceback (most recent call last): File "a.py", line 3, in f     x = g()   File
"b.py", line 9, in g     return h() AttributeError: 'Tensor' object has no attribute
'conv_tbc'``. Each frame's header (``File "…", line N, in name``) still says where a
line began: what follows a header up to the next one is that frame's code, and after
the last frame's code comes the exception line. Python prints no frame header with
anything after the function's name, so a header followed by more words, or two
headers on a line, is the mark of a flattened paste; any other line is left as it is.
"""

from __future__ import annotations

import re

from torchdoctor.parsing.scanner import TRACEBACK_HEADER

FRAME_HEAD = re.compile(r'File "[^"\n]{1,1000}", line \d{1,9}, in [^\s(]{1,200}(?:\(\))?')
# The exception line that closes the last frame's code: a type name (dotted or not)
# ending in one of Python's exception suffixes, then a colon, or the end of the line.
EXCEPTION_START = re.compile(
    r"(?:^|\s)(?P<line>(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}"
    r"(?:Error|Exception|Interrupt|Exit)(?::\s.*|:?$))")


def unflattened(lines: list[str]) -> list[str]:
    """``lines`` with every flattened traceback set back on a line per printed line."""
    if not any('File "' in line and _flattened(line) for line in lines):
        return lines
    out: list[str] = []
    for line in lines:
        out.extend(_split(line) if 'File "' in line and _flattened(line) else [line])
    return out


def _flattened(line: str) -> bool:
    heads = list(FRAME_HEAD.finditer(line))
    if not heads:
        return False
    return len(heads) > 1 or TRACEBACK_HEADER in line[:heads[0].start()] or bool(
        line[heads[0].end():].strip())


def _split(line: str) -> list[str]:
    heads = list(FRAME_HEAD.finditer(line))
    out: list[str] = []
    before = line[:heads[0].start()].rstrip()
    if before.strip():
        out.append(before)
    for position, head in enumerate(heads):
        out.append("  " + head.group(0))
        end = heads[position + 1].start() if position + 1 < len(heads) else len(line)
        rest = line[head.end():end].strip()
        if position + 1 == len(heads):
            exception = EXCEPTION_START.search(rest)
            if exception is not None:
                code = rest[:exception.start("line")].strip()
                if code:
                    out.append("    " + code)
                out.append(exception["line"].strip())
                continue
        if rest:
            out.append("    " + rest)
    return out
