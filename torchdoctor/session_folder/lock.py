"""One writer per session: a lock file held with ``flock`` (``msvcrt.locking`` on Windows).

Two processes that append to one journal, or both finish its pending repro,
would interleave events and run the repro twice. Every writer (a journal open
for appending, a report written into the session, a rerun) holds the lock
while it writes; a second process is turned away at once with who holds it,
never left waiting on a session the app may keep open for hours. The kernel
drops the lock when its holder dies, so a killed writer never leaves a
session locked. Within one process the lock is re-entrant: the app writing
the report of the session it has open is one writer.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from torchdoctor.session_folder.paths import inside, open_file

LOCK_NAME = ".lock"
_WIDTH = 120

_held: dict[Path, tuple[BinaryIO, int]] = {}
_guard = threading.Lock()


class SessionLocked(OSError):
    """Another process is writing to this session."""

    def __init__(self, folder: Path, holder: str) -> None:
        super().__init__(f"session {folder.name} is in use by another torchdoctor process"
                         f" ({holder or 'holder unknown'}); try again when it has finished")


def acquire(folder: str | os.PathLike) -> None:
    """Take the session's lock for this process, or raise ``SessionLocked``."""
    key = Path(folder).resolve()
    with _guard:
        if key in _held:
            handle, count = _held[key]
            _held[key] = (handle, count + 1)
            return
        handle = open_file(inside(folder, LOCK_NAME), "r+b")
        if not _try_lock(handle):
            handle.close()
            raise SessionLocked(Path(folder), _holder(folder))
        # Padded to one width, so the holder is rewritten in place, never truncated.
        holder = f"pid {os.getpid()}, since {time.strftime('%H:%M:%S')}: {_command()}"
        handle.write(holder.encode()[:_WIDTH].ljust(_WIDTH) + b"\n")
        handle.flush()
        _held[key] = (handle, 1)


def release(folder: str | os.PathLike) -> None:
    key = Path(folder).resolve()
    with _guard:
        handle, count = _held[key]
        if count > 1:
            _held[key] = (handle, count - 1)
            return
        del _held[key]
        handle.close()  # closing the file drops the lock


@contextmanager
def session_lock(folder: str | os.PathLike) -> Iterator[None]:
    acquire(folder)
    try:
        yield
    finally:
        release(folder)


def _try_lock(handle: BinaryIO) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(folder: str | os.PathLike) -> str:
    try:
        with open_file(inside(folder, LOCK_NAME), "rb") as f:
            return f.read(_WIDTH).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _command() -> str:
    words = [os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:2]]
    if words[0] == "__main__.py":
        words[0] = "torchdoctor"
    return " ".join(words)
