"""Remove every terminal control sequence from text that someone else wrote.

A paste or a user program's output can hold more than colour: an OSC string
that sets the window title, writes the clipboard (OSC 52) or opens a hyperlink
(OSC 8), a DCS string the terminal interprets, cursor moves that overwrite
what was printed. Printed back, they act on the user's terminal; parsed, an
OSC string whose terminator a regex misses can swallow the traceback after it.
So the text is cleaned once, before it is parsed or printed:

* CSI sequences (``ESC [`` and the 8-bit ``0x9b``), colour included;
* control strings (OSC, DCS, APC, PM, SOS), ended by BEL or ST (``ESC \\``,
  ``0x9c``); one that is never ended stops at the end of its line, so a
  broken sequence costs one line at most, never the text after it;
* the other escape sequences (``ESC (B``, ``ESC 7``) and any ESC left alone;
* C1 controls and the C0 controls other than tab, newline and carriage return
  (NUL padding, backspaces, bells).

The link text of a hyperlink stays; only the markup around it goes. Each
pattern here is a single step or a run of one character class, so cleaning
is linear in the text's length.
"""

from __future__ import annotations

import re

_STRING_OPENERS = r"(?:\x1b[\]P_^X]|[\x90\x98\x9d\x9e\x9f])"
_CONTROL_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte
    rf"|{_STRING_OPENERS}[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, APC, PM, SOS
    r"|\x1b[!-/]*[0-~]?"  # other escapes (ESC ( B, ESC 7, ESC c), and a lone ESC
)
_LONE_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")


def strip_controls(text: str) -> str:
    """``text`` without terminal control sequences or stray control characters."""
    if not _needs_cleaning(text):
        return text
    return _LONE_CONTROLS.sub("", _CONTROL_SEQUENCES.sub("", text))


def _needs_cleaning(text: str) -> bool:
    """A fast pass for the common case: plain text with nothing to remove."""
    return _LONE_CONTROLS.search(text) is not None
