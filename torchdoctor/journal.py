"""The session journal: an append-only JSON-lines file, one event per line.

Each event is written and flushed as it happens, so killing torchdoctor at
any moment (even SIGKILL) loses at most the event being written: a flushed
``write`` is in the operating system's hands and survives the process. A
torn last line, or an event whose shape is wrong (``session_folder.events``),
is skipped on reading with a warning, never an exception. A journal open for
appending holds the session's lock (``session_folder.lock``), so one process
writes a session at a time.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from torchdoctor.session_folder import lock
from torchdoctor.session_folder.events import problem
from torchdoctor.session_folder.paths import inside, open_file

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
        lock.acquire(directory)
        try:
            self._file = open_file(inside(directory, JOURNAL_NAME), "ab")
        except BaseException:
            lock.release(directory)
            raise

    @property
    def session_id(self) -> str:
        return self.directory.name

    @classmethod
    def create(cls, root: str | os.PathLike | None = None) -> Journal:
        base = sessions_root(root)
        base.mkdir(parents=True, exist_ok=True)
        directory = base / new_session_id()
        directory.mkdir(mode=0o700)  # a session holds tracebacks and arguments: keep it private
        return cls(directory)

    @classmethod
    def reopen(cls, directory: str | os.PathLike) -> tuple[Journal, list[dict], list[str]]:
        """Continue an existing session: its events so far, warnings, and a journal to append to.

        The lock is taken before the events are read, so the sequence goes on
        from the last event any writer appended.
        """
        directory = Path(directory)
        with lock.session_lock(directory):
            events, warnings = read_events(directory / JOURNAL_NAME)
            next_seq = max((e["seq"] for e in events), default=-1) + 1
            journal = cls(directory, next_seq)
        if warnings:
            # A torn line stays in the file; start the next event on a fresh line.
            journal._file.write(b"\n")
            journal._file.flush()
        return journal, events, warnings

    def append(self, type_: str, **data: Any) -> dict:
        event = {"v": SCHEMA_VERSION, "seq": self._seq, "t": _now(), "type": type_, **data}
        line = json.dumps(event, default=str, ensure_ascii=False)
        self._file.write((line + "\n").encode("utf-8"))
        self._file.flush()
        self._seq += 1
        return event

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
            lock.release(self.directory)


def read_events(path: str | os.PathLike) -> tuple[list[dict], list[str]]:
    """All valid events of a journal, and a warning for each line that was skipped."""
    events, warnings, _ = read_journal(path)
    return events, warnings


def read_journal(path: str | os.PathLike) -> tuple[list[dict], list[str], int]:
    """``read_events`` and how many lines were skipped as unreadable or malformed.

    The journal must be a regular file, not a link: a link would read a file
    outside the session.
    """
    events: list[dict] = []
    warnings: list[str] = []
    skipped = 0
    with open_file(path, "rb") as f:
        data = f.read().decode("utf-8", errors="replace")
    for number, line in enumerate(data.split("\n"), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            warnings.append(f"{path}:{number}: skipped an unreadable event (torn write?)")
            skipped += 1
            continue
        wrong = problem(event)
        if wrong:
            warnings.append(f"{path}:{number}: skipped a malformed event: {wrong}")
            skipped += 1
            continue
        if event["v"] > SCHEMA_VERSION:
            warnings.append(f"{path}:{number}: event from a newer torchdoctor (v{event['v']})")
        events.append(event)
    return events, warnings, skipped


@dataclass(frozen=True)
class SessionInfo:
    id: str
    directory: Path
    started: str  # the start time its journal records
    events: int
    title: str  # what the session is about: the error type and message, or the target
    skipped: int = 0  # malformed or torn events left out
    mine: bool = True  # its folder and journal belong to the user running torchdoctor
    problem: str = ""  # why it could not be read at all


def list_sessions(root: str | os.PathLike | None = None) -> list[SessionInfo]:
    """Recorded sessions, newest first by the start time each journal records.

    A session that cannot be read is listed with the reason, never hiding the
    others; folders that are links are not sessions.
    """
    base = sessions_root(root)
    if not base.is_dir():
        return []
    infos = []
    for directory in base.iterdir():
        if directory.is_symlink() or not directory.is_dir():
            continue
        path = directory / JOURNAL_NAME
        if not (path.is_file() or path.is_symlink()):
            continue
        try:
            events, _, skipped = read_journal(inside(directory, JOURNAL_NAME))
            mine = _mine(directory, path)
        except OSError as exc:
            infos.append(SessionInfo(directory.name, directory, "", 0, "", problem=str(exc),
                                     mine=False))
            continue
        infos.append(SessionInfo(directory.name, directory, _started(events), len(events),
                                 _title(events), skipped, mine))
    return sorted(infos, key=lambda i: (_when(i.started), i.id), reverse=True)


def find_session(ref: str | None, root: str | os.PathLike | None = None) -> Path:
    """A session directory by id, unique id prefix, or path; the latest when ``ref`` is empty.

    "The latest" is the session this user started last, by the start time its
    journal records: a name sorts wherever its author wants (a ``9999…``
    folder in a cloned repository), and a start time in the future or a
    folder of another user's is never taken for the latest.
    """
    if ref and Path(ref, JOURNAL_NAME).is_file():
        return Path(ref)
    sessions = list_sessions(root)
    if not sessions:
        raise LookupError(f"no sessions recorded under {sessions_root(root)}")
    if not ref:
        soon = datetime.now(timezone.utc) + timedelta(minutes=5)
        latest = [s for s in sessions if s.mine and _when(s.started) <= soon
                  and _when(s.started) > _NEVER]
        if not latest:
            raise LookupError(f"{len(sessions)} sessions under {sessions_root(root)}, but none"
                              " was started by you with a start time in its journal; name one"
                              " (torchdoctor sessions lists them)")
        return latest[0].directory
    hits = [s for s in sessions if s.id.startswith(ref)]
    if len(hits) == 1:
        return hits[0].directory
    if not hits:
        raise LookupError(f"no session {ref!r} under {sessions_root(root)}"
                          " (torchdoctor sessions lists them)")
    raise LookupError(f"{ref!r} names {len(hits)} sessions; give more of the id")


_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def _started(events: list[dict]) -> str:
    start = next((e for e in events if e["type"] == "session"), events[0] if events else None)
    return start["t"] if start else ""


def _when(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return _NEVER
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _mine(directory: Path, journal: Path) -> bool:
    if not hasattr(os, "geteuid"):
        return True
    uid = os.geteuid()
    return directory.stat().st_uid == uid and journal.stat().st_uid == uid


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
