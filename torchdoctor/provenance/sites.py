"""A place in the user's code as findings show it: file, line, the code there, module."""

from __future__ import annotations

import linecache
from typing import Any


def site(event: dict[str, Any] | None) -> dict[str, Any] | None:
    if not event or not event.get("file") or not event.get("line"):
        return None
    return {
        "file": event["file"],
        "line": event["line"],
        "code": linecache.getline(event["file"], event["line"]).strip() or None,
        "module": event.get("module_label") or event.get("module"),
    }


def step(event: dict[str, Any]) -> dict[str, Any]:
    """One event of a provenance chain, small enough to show."""
    out = (event.get("outputs") or [{}])[0]
    return {"op": event.get("op"), **(site(event) or {}), "shape": out.get("shape"),
            "dtype": out.get("dtype"), "device": out.get("device")}
