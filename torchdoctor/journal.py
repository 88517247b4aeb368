"""The session journal: an append-only JSON-lines file, one event per line.

Each event is written and flushed as it happens, so killing torchdoctor at
any moment (even SIGKILL) loses at most the event being written: a flushed
``write`` is in the operating system's hands and survives the process. A
torn last line is skipped on reading, with a warning, never an exception.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
JOURNAL_NAME = "journal.jsonl"


def sessions_root(root: str | os.PathLike | None = None) -> Path:
    """Where sessions live: the argument, ``$TORCHDOCTOR_SESSIONS``, or ./.torchdoctor/sessions."""
    if root is not None:
        return Path(root)
    env = os.environ.get("TORCHDOCTOR_SESSIONS")
    return Path(env) if env else Path.cwd() / ".torchdoctor" / "sessions"


def new_session_id() -> str:
    # Sortable by time, unique without coordination between processes.
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


class Journal:
    def __init__(self, directory: Path, next_seq: int = 0) -> None:
        self.directory = directory
        self.path = directory / JOURNAL_NAME
        self._seq = next_seq
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the session

    @property
    def session_id(self) -> str:
        return self.directory.name

    @classmethod
    def create(cls, root: str | os.PathLike | None = None) -> Journal:
        directory = sessions_root(root) / new_session_id()
        directory.mkdir(parents=True, exist_ok=False)
        return cls(directory)

    @classmethod
    def reopen(cls, directory: str | os.PathLike) -> tuple[Journal, list[dict], list[str]]:
        """Continue an existing session: its events so far, warnings, and a journal to append to."""
        directory = Path(directory)
        events, warnings = read_events(directory / JOURNAL_NAME)
        next_seq = events[-1]["seq"] + 1 if events else 0
        journal = cls(directory, next_seq)
        if warnings:
            # A torn line stays in the file; start the next event on a fresh line.
            journal._file.write("\n")
            journal._file.flush()
        return journal, events, warnings

    def append(self, type_: str, **data: Any) -> dict:
        event = {"v": SCHEMA_VERSION, "seq": self._seq, "t": _now(), "type": type_, **data}
        line = json.dumps(event, default=str, ensure_ascii=False)
        self._file.write(line + "\n")
        self._file.flush()
        self._seq += 1
        return event

    def close(self) -> None:
        self._file.close()


def read_events(path: str | os.PathLike) -> tuple[list[dict], list[str]]:
    """All readable events of a journal, and a warning for each line that could not be read."""
    events: list[dict] = []
    warnings: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                warnings.append(f"{path}:{number}: skipped an unreadable event (torn write?)")
                continue
            if not isinstance(event, dict) or "type" not in event:
                warnings.append(f"{path}:{number}: skipped a line that is not an event")
                continue
            if event.get("v", SCHEMA_VERSION) > SCHEMA_VERSION:
                warnings.append(f"{path}:{number}: event from a newer torchdoctor (v{event['v']})")
            events.append(event)
    return events, warnings


@dataclass(frozen=True)
class SessionInfo:
    id: str
    directory: Path
    started: str
    events: int
    title: str  # what the session is about: the error type and message, or the target


def list_sessions(root: str | os.PathLike | None = None) -> list[SessionInfo]:
    """Recorded sessions, newest first."""
    base = sessions_root(root)
    if not base.is_dir():
        return []
    infos = []
    for directory in sorted(base.iterdir(), reverse=True):
        path = directory / JOURNAL_NAME
        if not path.is_file():
            continue
        events, _ = read_events(path)
        infos.append(SessionInfo(directory.name, directory,
                                 events[0]["t"] if events else "", len(events),
                                 _title(events)))
    return infos


def find_session(ref: str | None, root: str | os.PathLike | None = None) -> Path:
    """A session directory by id, unique id prefix, or path; the newest when ``ref`` is empty."""
    if ref and Path(ref, JOURNAL_NAME).is_file():
        return Path(ref)
    sessions = list_sessions(root)
    if not sessions:
        raise LookupError(f"no sessions recorded under {sessions_root(root)}")
    if not ref:
        return sessions[0].directory
    hits = [s for s in sessions if s.id.startswith(ref)]
    if len(hits) == 1:
        return hits[0].directory
    if not hits:
        raise LookupError(f"no session {ref!r} under {sessions_root(root)}"
                          " (torchdoctor sessions lists them)")
    raise LookupError(f"{ref!r} names {len(hits)} sessions; give more of the id")


def _title(events: list[dict]) -> str:
    for event in events:
        if event["type"] == "parse" and event.get("error"):
            error = event["error"]
            message = (error.get("message") or "").splitlines()[0:1]
            return f"{error.get('type') or 'Error'}: {message[0] if message else ''}"[:100]
    for event in events:
        if event["type"] == "input" and event.get("source") == "symptom":
            return str(event.get("text", ""))[:100]
        if event["type"] == "session" and event.get("target"):
            return str(event["target"])[:100]
    return ""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
