"""A scratch copy of the user's project, so a patch is tried without touching their files.

The copy keeps the folder layout (imports and relative data paths work as
in the user's run) but not everything in it: version-control and cache
folders are left out, and large files are linked rather than copied, since
a fix never changes data and a checkpoint can weigh gigabytes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SKIPPED_DIRS = {".git", ".hg", ".svn", ".torchdoctor", "__pycache__", ".venv", "venv",
                "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", "wandb",
                "lightning_logs", "runs", "mlruns", ".ipynb_checkpoints"}
# A folder holding one of these is an installed environment (venv, virtualenv, conda),
# whatever its name: thousands of library files that no fix ever touches.
ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")
# Files larger than this are linked, not copied.
LINK_ABOVE_BYTES = 4 * 1024 * 1024
# A project with more files than this is not copied file by file; only its code is.
MAX_FILES = 5000


class Workspace:
    """A temporary copy of ``root``; ``path(original)`` maps a file into it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.directory = Path(tempfile.mkdtemp(prefix="torchdoctor-fix-"))
        self.copy = self.directory / self.root.name
        self._fill()

    def _fill(self) -> None:
        count = 0
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = _kept(folder, dirs)
            count += len(files)
            if count > MAX_FILES:
                break
        code_only = count > MAX_FILES
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = _kept(folder, dirs)
            here = Path(folder)
            target = self.copy / here.relative_to(self.root)
            target.mkdir(parents=True, exist_ok=True)
            for name in files:
                source = here / name
                if source.is_symlink() or not source.is_file():
                    continue
                if code_only and source.suffix != ".py":
                    continue
                if source.stat().st_size > LINK_ABOVE_BYTES:
                    (target / name).symlink_to(source)
                else:
                    shutil.copy2(source, target / name)

    def path(self, original: str | os.PathLike) -> Path:
        return self.copy / Path(original).resolve().relative_to(self.root)

    def write(self, original: str | os.PathLike, text: str) -> Path:
        destination = self.path(original)
        if destination.is_symlink():
            destination.unlink()
        destination.write_text(text, encoding="utf-8")
        return destination

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Workspace:  # noqa: PYI034 - Python 3.10 has no typing.Self
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kept(folder: str, dirs: list[str]) -> list[str]:
    return [d for d in dirs if d not in SKIPPED_DIRS and not any(
        os.path.exists(os.path.join(folder, d, marker)) for marker in ENVIRONMENT_MARKERS)]
