"""Take the person out of a report: home directories, user names and host names.

A report is meant to be pasted into a public issue; paths like
``/home/alice/work/train.py`` say who and where. Redaction runs over every
string of the report before it is rendered, so Markdown and JSON agree.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from typing import Any

_OTHER_HOMES = (
    re.compile(r"/home/[^/\s'\"`]+"),
    re.compile(r"/Users/[^/\s'\"`]+"),
    re.compile(r"[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\)[^\\\s'\"`]+", re.IGNORECASE),
)


class Redactor:
    """Replaces the current user's home with ``~``, other homes, the user and the host."""

    def __init__(self, home: str | None = None, user: str | None = None,
                 host: str | None = None) -> None:
        self.home = (home if home is not None else os.path.expanduser("~")).rstrip("/\\")
        self.user = user if user is not None else _current_user()
        self.host = host if host is not None else socket.gethostname()

    def text(self, value: str) -> str:
        if self.home and len(self.home) > 1:
            value = value.replace(self.home, "~")
        value = _OTHER_HOMES[0].sub("/home/<user>", value)
        value = _OTHER_HOMES[1].sub("/Users/<user>", value)
        value = _OTHER_HOMES[2].sub(r"C:\\Users\\<user>", value)
        # A name is masked only as a whole word, and never a one-letter one.
        for name, mask in ((self.host, "<host>"), (self.user, "<user>")):
            if name and len(name) >= 2:
                value = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", mask, value)
        return value

    def value(self, obj: Any) -> Any:
        """Every string inside dicts and lists, keys included."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v) for v in obj]
        return obj


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
