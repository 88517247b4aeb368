"""Files in the user's cache directory that only the user can write, and that are only data.

Whatever sits in ``~/.cache/torchdoctor`` is read back on the next start, so it
is treated like any other input: the directory is made private (0700), a file
is trusted only when this user owns it and nobody else may write it, and its
content is JSON, which cannot run code. A file that fails any of that reads as
absent, and the caller rebuilds what it held.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

# Bigger than any knowledge base; a cache file past it was not written by us.
_LARGEST = 64 * 2**20


def read_json(path: Path) -> Any:
    """The JSON value stored at ``path``, or None when it is missing, foreign or corrupt."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not (_ours(info) and _ours(os.stat(path.parent))) or info.st_size > _LARGEST:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return json.loads(stream.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(descriptor)


def write_json(path: Path, value: Any) -> None:
    """Store ``value`` at ``path`` atomically, in a private directory; failures only cost speed."""
    try:
        _private_dir(path.parent)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                             | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(json.dumps(value, separators=(",", ":")).encode("utf-8"))
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError):
        pass  # a read-only home only costs the next process the same work


def _private_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.stat(directory)
    if stat.S_IMODE(info.st_mode) & 0o077 and _owned(info):
        os.chmod(directory, 0o700)


def _owned(info: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or info.st_uid == getuid()


def _ours(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return _owned(info) and not stat.S_IMODE(info.st_mode) & 0o022
