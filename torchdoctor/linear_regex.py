"""Knowledge-base regexes run on RE2, so matching time grows linearly with the text.

A knowledge-base file may come from anyone, and a paste may be a 5 MB log line.
Python's ``re`` backtracks: ``(a+)+$`` on forty ``a``s, or an innocent
``(?P<name>\\w+) is`` searched through a 64 KB run of letters, runs for
minutes. Two remedies were weighed:

* a time budget around ``re``: a search holds the GIL and cannot be stopped
  from another thread, so it needs a subprocess or ``SIGALRM`` (main thread,
  POSIX only) per search; every bad pattern still costs its whole budget on
  every paste, and whether a pattern "times out" depends on the machine's load;
* RE2 (``google-re2``): an automaton engine whose time is linear in the text
  by construction, with Python's ``(?P<name>...)`` groups. It refuses what it
  cannot do in linear time (lookaround, backreferences), and that refusal
  happens once, when the file is loaded, with the file and line to fix.

RE2 was chosen: the guarantee holds for any pattern and any input, and a bad
pattern is found by ``kb check`` instead of by a user waiting on ``diagnose``.
What each regex sees is also capped (``TEXT_LIMIT``): the head of the message,
where torch puts what the patterns look for.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

# Python's own regex parser, for reading a pattern's structure (its fixed words, its
# alternatives); it moved in Python 3.11.
try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]  # noqa: F401

# Characters of a message (or of prose) that a knowledge-base regex is run on.
TEXT_LIMIT = 16_384


class RegexError(ValueError):
    """RE2 cannot compile the pattern; the message says why, in RE2's words."""


@functools.lru_cache(maxsize=2048)
def compile_linear(regex: str, ignore_case: bool = False) -> Any:
    """The RE2 program for ``regex``; raises RegexError (never logs to stderr)."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(regex, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexError(str(reason)) from None


def bounded(text: str) -> str:
    """The part of ``text`` a knowledge-base regex is allowed to see."""
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT]
