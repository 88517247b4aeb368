"""Recognise one frame line in any of the formats people paste, and judge whose code it is.

Formats: CPython (``File "x.py", line 3, in f``), IPython 8 (``File ~/x.py:3, in f(a)``,
``Cell In[12], line 5``), IPython 8.0-8.4 (``Input In [3], in <cell line: 1>()``) and
IPython 7 (``<ipython-input-3-ab> in <module>``, ``/x/y.py in f(a)``).
"""

from __future__ import annotations

import re

from torchdoctor.parsing.model import Frame

PYTHON_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?')
IPYTHON8_FRAME = re.compile(r"File (?P<file>[^\s\"].*?):(?P<line>\d+)(?:, in (?P<func>.+))?")
IPYTHON8_CELL = re.compile(r"Cell In ?\[(?P<cell>\d*)\], line (?P<line>\d+)")
IPYTHON8_INPUT = re.compile(r"Input In ?\[(?P<cell>\d*)\](?:, in (?P<func>.+))?")
IPYTHON7_FRAME = re.compile(
    r"(?P<file><ipython-input-[^>\s]+>|(?:~|/|[A-Za-z]:\\)\S*\.pyx?) in (?P<func><cell line: \d+>|[^\s(]+)"
)
IPYTHON_SOURCE = re.compile(r"(?P<arrow>-*>)?\s*(?P<line>\d+)(?: (?P<code>.*))?")
CARET_LINE = re.compile(r"[~^\s]+")

SITE_PACKAGES = re.compile(r"/(?:site|dist)-packages/", re.IGNORECASE)
STDLIB = re.compile(
    r"(?:^|/)lib(?:64)?/python\d(?:\.\d+)?/|/python\d+/lib/|^<frozen |^/usr/lib/python",
    re.IGNORECASE,
)
TORCH_PACKAGE = re.compile(r"(?:^|/)torch/")


# More digits than any source file has lines: a number this long is damage, not a line.
LONGEST_LINE_NUMBER = 9


def line_number(digits: str) -> int | None:
    """A line number from its digits, or None when there are too many to be one."""
    return int(digits) if len(digits) <= LONGEST_LINE_NUMBER else None


def is_user_file(file: str, function: str | None) -> bool:
    """Library frames are site-packages, the stdlib, torch itself and generated code.

    ``<string>`` is user code only as a ``<module>`` (``python -c``); anywhere else it is
    code that torch (fx, dynamo) generated. Notebook cells and ``~/`` paths are user code.
    """
    path = file.replace("\\", "/")
    if path.startswith("<"):
        if path.startswith(("<ipython-input", "<stdin>")):
            return True
        return path == "<string>" and function == "<module>"
    if path.startswith(("Cell In", "Input In")):
        return True
    return not (SITE_PACKAGES.search(path) or STDLIB.search(path) or TORCH_PACKAGE.search(path))


def _clean_function(func: str | None) -> str | None:
    """IPython prints the signature (``Net.forward(self, x)``); keep only the name."""
    if not func:
        return None
    func = func.strip()
    if func.endswith(")") and "(" in func and not func.startswith("<"):
        func = func[: func.index("(")]
    elif func.startswith("<") and ">" in func:
        func = func[: func.rindex(">") + 1]
    return func


def make_frame(file: str, line: int | None, function: str | None,
               code: str | None = None) -> Frame:
    function = _clean_function(function)
    return Frame(file=file, line=line, function=function, code=code,
                 is_user=is_user_file(file, function))


def read_frame_line(stripped: str) -> tuple[Frame, bool] | None:
    """A Frame from one stripped line, and whether its source follows IPython-style.

    IPython frames carry their line and code on a later ``---->`` arrow line.
    """
    if stripped.startswith("File "):
        match = PYTHON_FRAME.fullmatch(stripped)
        if match:
            return make_frame(match["file"], line_number(match["line"]), match["func"]), False
        match = IPYTHON8_FRAME.fullmatch(stripped)
        if match:
            return make_frame(match["file"], line_number(match["line"]), match["func"]), True
        return None
    if stripped.startswith("Cell In"):
        match = IPYTHON8_CELL.fullmatch(stripped)
        if match:
            return make_frame(f"Cell In[{match['cell']}]", line_number(match["line"]), None), True
        return None
    if stripped.startswith("Input In"):
        match = IPYTHON8_INPUT.fullmatch(stripped)
        if match:
            return make_frame(f"Input In[{match['cell']}]", None, match["func"]), True
        return None
    if " in " in stripped:
        match = IPYTHON7_FRAME.match(stripped)
        if match:
            return make_frame(match["file"], None, match["func"]), True
    return None


def read_ipython_source(stripped: str) -> tuple[bool, int | None, str] | None:
    """``----> 5 out = model(x)`` → (True, 5, code); ``  3 x = 1`` → (False, 3, code)."""
    if not stripped or not (stripped[0].isdigit() or stripped[0] in "->"):
        return None
    match = IPYTHON_SOURCE.fullmatch(stripped)
    if not match:
        return None
    return bool(match["arrow"]), line_number(match["line"]), (match["code"] or "").strip()


def is_caret_line(stripped: str) -> bool:
    """Python 3.11+ underlines (``~~~^^^``) carry no information for diagnosis."""
    return bool(stripped) and stripped[0] in "~^" and CARET_LINE.fullmatch(stripped) is not None
