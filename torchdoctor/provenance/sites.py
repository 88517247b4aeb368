"""A place in the user's code as findings show it: file, line, the code there, module;
and the line that bound a name, where a value the program keeps is fixed."""

from __future__ import annotations

import ast
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


def last_binding(filename: str, names: set[str], first: int, before: int) -> int | None:
    """The last line in ``first..before`` that assigns one of ``names`` (``a, h = f(h)``)."""
    if not names:
        return None
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) \
                and first <= node.lineno < before:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if bound & names and (found is None or node.lineno > found):
                found = node.lineno
    return found
