"""Where torchdoctor looks for a user's own files, following the XDG conventions.

Kept apart so that every part (knowledge base, cache, app settings) agrees on
one set of directories and tests can redirect them with environment variables.
"""

from __future__ import annotations

import os
from pathlib import Path

KB_ENV = "TORCHDOCTOR_KB"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/torchdoctor``, else ``~/.config/torchdoctor``."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "torchdoctor"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/torchdoctor``, else ``~/.cache/torchdoctor``."""
    return _xdg("XDG_CACHE_HOME", ".cache") / "torchdoctor"


def user_knowledge_dirs() -> list[Path]:
    """The user's knowledge directories in load order: the config one, then ``$TORCHDOCTOR_KB``.

    ``$TORCHDOCTOR_KB`` holds extra directories separated by ``os.pathsep``;
    empty items are ignored so a stray separator does not mean the current
    directory.
    """
    dirs = [config_dir() / "knowledge"]
    extra = os.environ.get(KB_ENV, "")
    dirs += [Path(item).expanduser() for item in extra.split(os.pathsep) if item.strip()]
    return dirs


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    # The XDG spec says a relative value is invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback
