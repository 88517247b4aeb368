"""Writing a verified patch into the user's own file, keeping the original beside it."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.rewrites.patch import Patch


class StaleFile(Exception):
    """The file changed since the patch was made: writing it would lose the user's edits."""


def write_patch(patch: Patch, path: Path) -> Path:
    """Write the patched text to ``path``; return the backup (``NAME.py.orig``, numbered if taken)."""
    if path.read_text(encoding="utf-8") != patch.original:
        raise StaleFile(f"{path} changed since the patch was made; run torchdoctor fix again")
    backup = path.with_name(path.name + ".orig")
    number = 1
    while backup.exists():
        backup = path.with_name(f"{path.name}.orig{number}")
        number += 1
    backup.write_text(patch.original, encoding="utf-8")
    temporary = path.with_name(f".{path.name}.torchdoctor-tmp")
    temporary.write_text(patch.patched, encoding="utf-8")
    temporary.replace(path)
    return backup
