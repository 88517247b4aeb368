"""The running script's output, while it runs: what a terminal would have shown.

A patient's stdout is a pipe, so Python would hold a script's prints in a
buffer until it exits and the app would sit blank for as long as it runs.
Every patient the app starts is therefore unbuffered, and the latest one is
kept so its output can be shown (and its last lines journaled) as it comes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchdoctor.investigation.walk import PatientFactory

KEPT_LINES = 20


class WatchedPatients:
    """A client factory that starts unbuffered patients and remembers the latest."""

    def __init__(self, factory: PatientFactory) -> None:
        self.factory = factory
        self.latest: Any = None

    def __call__(self, env: Mapping[str, str] | None = None) -> Any:
        client = self.factory({**(env or {}), "PYTHONUNBUFFERED": "1"})
        self.latest = client
        return client

    def forget(self) -> None:
        """A new step starts: the last one's output is not this one's."""
        self.latest = None

    def tail(self, lines: int = KEPT_LINES) -> str:
        """The last lines the latest patient printed, stdout then stderr.

        The client drains both pipes into taps it keeps to itself; their tails
        are read here, in this one place.
        """
        client = self.latest
        parts = []
        for name in ("_stdout", "_stderr"):
            tap = getattr(client, name, None)
            text = tap.tail(lines) if tap is not None else ""
            if text.strip():
                parts.append(text.rstrip("\n"))
        return "\n".join("\n".join(parts).splitlines()[-lines:])
