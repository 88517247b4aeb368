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

The link text of a hyperlink stays; only the markup around it goes. The
text is split at each ESC and the sequence is read from the start of each
piece, so cleaning is linear in the text's length and runs at string speed.
"""

from __future__ import annotations

import re

# What may follow an ESC: a CSI sequence, a control string (OSC, DCS, SOS, PM, APC) up to
# its terminator or the end of its line, or a short escape; the empty match is a lone ESC.
_AFTER_ESC = re.compile(
    r"\[[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte
    r"|[\]PX^_][^\x07\x9c\n]*[\x07\x9c]?"  # a string; ESC \ ends it as the next ESC
    r"|[!-/]*[0-~]?"  # ESC ( B, ESC 7, ESC c, the backslash of ESC \
)
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?")
_C1_SEQUENCES = re.compile(
    r"\x9b[0-?]*[ -/]*[@-~]?|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*[\x07\x9c]?")
_C1_OPENERS = "\x9b\x90\x98\x9d\x9e\x9f"
_LONE_CONTROLS = dict.fromkeys([*range(9), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)])


def strip_controls(text: str) -> str:
    """``text`` without terminal control sequences or stray control characters."""
    if not _needs_cleaning(text):
        return text
    if "\x1b[" in text:
        text = _CSI.sub("", text)  # the bulk of a coloured log, at the regex's literal-prefix speed
    if "\x1b" in text:
        parts = text.split("\x1b")
        text = parts[0] + "".join(part[_AFTER_ESC.match(part).end():] for part in parts[1:])
    if any(opener in text for opener in _C1_OPENERS):
        text = _C1_SEQUENCES.sub("", text)
    return text.translate(_LONE_CONTROLS)


_C0_BYTES = bytes([*range(9), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_C1_UTF8 = re.compile(b"\xc2[\x80-\x9f]")


def _needs_cleaning(text: str) -> bool:
    """A fast pass for the common case, plain text: a 10 MB log costs milliseconds.

    Deleting bytes from the UTF-8 form runs at memory speed, where a regex
    character class walks the text one character at a time; a C1 control is
    U+0080..U+009F, which UTF-8 writes as 0xC2 and one byte.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data.translate(None, _C0_BYTES)) != len(data):
        return True
    return b"\xc2" in data and _C1_UTF8.search(data) is not None
