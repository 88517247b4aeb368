"""Files of a session folder, opened only when they are plain files inside it.

Every name that reaches here may come from a journal someone else wrote, so a
name must be one plain component (no separator, no ``..``), no step of the
way may be a symbolic link, and the resolved path must stay in the folder.
Files are opened with ``O_NOFOLLOW`` where the system has it, so a link put
in place between the check and the open is refused too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class UnsafeSessionPath(OSError):
    """A session file that is a link, leaves the folder, or is not a plain file."""


def is_plain_name(name: object) -> bool:
    """One file name and nothing else: what a journal may name inside a session."""
    if not isinstance(name, str) or name in ("", ".", "..") or "\0" in name:
        return False
    return not any(sep in name for sep in ("/", "\\", os.sep)) and ":" not in name


def inside(folder: str | os.PathLike, *names: str) -> Path:
    """``folder/names...`` after checking each name and that no step is a symbolic link."""
    base = Path(folder)
    if base.is_symlink():
        raise UnsafeSessionPath(f"{base} is a symbolic link; a session folder must be a folder")
    path = base
    for name in names:
        if not is_plain_name(name):
            raise UnsafeSessionPath(f"{name!r} is not a plain file name inside {base}")
        path = path / name
        if path.is_symlink():
            raise UnsafeSessionPath(f"{path} is a symbolic link; refusing to follow it")
    resolved_base = base.resolve()
    if path.resolve() != resolved_base and resolved_base not in path.resolve().parents:
        raise UnsafeSessionPath(f"{path} leads outside the session {base}")
    return path


def open_file(path: str | os.PathLike, mode: str) -> BinaryIO:
    """Open a regular file for ``rb``, ``ab``, ``wb`` or ``r+b`` (created when missing),
    refusing a link, FIFO or device.

    ``O_NOFOLLOW`` refuses a link put in place after the caller's checks;
    ``O_NONBLOCK`` keeps a FIFO planted under a file's name from hanging the open.
    """
    path = Path(path)
    if path.is_symlink():
        raise UnsafeSessionPath(f"{path} is a symbolic link; refusing to follow it")
    flags = {"rb": os.O_RDONLY, "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
             "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "r+b": os.O_RDWR | os.O_CREAT}[mode]
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _BINARY, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise UnsafeSessionPath(f"{path} is a symbolic link; refusing to follow it") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeSessionPath(f"{path} is not a regular file")
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return open(fd, mode)


def read_bytes(folder: str | os.PathLike, name: str) -> bytes:
    """A plain file of the session, read only when it is one."""
    with open_file(inside(folder, name), "rb") as f:
        return f.read()


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace a file's content, refusing a link where the file should be."""
    with open_file(path, "wb") as f:
        f.write(data)
