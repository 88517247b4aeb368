"""One wording for "where" a probe points: module, op, file:line."""

from __future__ import annotations

import os
from collections.abc import Callable


def describe_location(location: dict | None, quote: Callable[[str], str] = str,
                      short_paths: bool = False) -> str:
    """``module features.3, op Tensor.view, model.py:23``; ``quote`` wraps each name
    (Markdown passes backticks), ``short_paths`` keeps only the file's name."""
    if not location:
        return ""
    parts = []
    if location.get("module"):
        parts.append(f"module {quote(location['module'])}")
    if location.get("op"):
        parts.append(f"op {quote(location['op'])}")
    if location.get("file"):
        path = os.path.basename(location["file"]) if short_paths else location["file"]
        line = f":{location['line']}" if location.get("line") else ""
        parts.append(quote(f"{path}{line}"))
    return ", ".join(parts)
