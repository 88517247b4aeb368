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


def constant_binding(filename: str | None, line: int | None, numbers: list[int]) -> int | None:
    """The line that sets a named constant the statement at ``line`` reads and whose value
    holds ``numbers`` (``IMAGE_SIZE = (540, 760)`` for ``resize(x, size=IMAGE_SIZE)``).

    Only a module-level name bound once, to a literal number or tuple of numbers,
    is a constant: a value computed at run time has no single line that sets it.
    """
    if not filename or not line or not numbers:
        return None
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    read = {node.id for statement in ast.walk(tree)
            if isinstance(statement, ast.stmt) and statement.lineno <= line
            <= (statement.end_lineno or statement.lineno)
            and not isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.For,
                                           ast.While, ast.If, ast.With, ast.Try))
            for node in ast.walk(statement) if isinstance(node, ast.Name)}
    bindings: dict[str, list[tuple[int, Any]]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                for name, value in _bound(target, statement.value):
                    bindings.setdefault(name, []).append((statement.lineno, value))
    for name in sorted(read):
        bound = bindings.get(name) or []
        if len(bound) == 1 and _holds(bound[0][1], numbers):
            return bound[0][0]
    return None


def _bound(target: ast.expr, value: ast.expr):
    """(name, value node) pairs of an assignment, unpacking ``A, B = 1, 2``."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for sub_target, sub_value in zip(target.elts, value.elts):
            yield from _bound(sub_target, sub_value)


def _holds(value: ast.expr, numbers: list[int]) -> bool:
    try:
        literal = ast.literal_eval(value)
    except ValueError:
        return False
    found = list(literal) if isinstance(literal, (tuple, list)) else [literal]
    return all(isinstance(n, int) for n in found) and all(n in found for n in numbers)
