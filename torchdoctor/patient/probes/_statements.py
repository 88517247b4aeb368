"""The user's statement at a failing line, and the objects it names in the live frame.

Several errors say what an op refused but not which of the user's objects it
was (the leaf written in place, the loss class built with tensors, the value
passed where a tensor was wanted). The failing frame still holds them: the
statement's syntax names them, and a name or attribute chain is looked up in
the frame, never evaluated.
"""

from __future__ import annotations

import ast
import linecache
from types import FrameType
from typing import Any

MISSING = object()


def parsed(filename: str) -> ast.Module | None:
    """The user's file as the interpreter ran it (``linecache``), or None."""
    try:
        return ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None


def statement_at(filename: str, line: int) -> ast.stmt | None:
    """The innermost simple statement of ``filename`` that spans ``line``."""
    tree = parsed(filename)
    if tree is None:
        return None
    found = None
    for node in ast.walk(tree):
        spans = isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and (
            node.lineno <= line <= (node.end_lineno or node.lineno))
        if spans and (found is None or node.lineno >= found.lineno):
            found = node
    return found


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor,
             ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


def lookup(expr: ast.expr, frame: FrameType) -> Any:
    """The value of a name or an attribute chain (``p``, ``self.fc.weight``) in ``frame``;
    ``MISSING`` for anything else: nothing the user wrote is run."""
    if isinstance(expr, ast.Name):
        if expr.id in frame.f_locals:
            return frame.f_locals[expr.id]
        if expr.id in frame.f_globals:
            return frame.f_globals[expr.id]
        return frame.f_builtins.get(expr.id, MISSING)
    if isinstance(expr, ast.Attribute):
        owner = lookup(expr.value, frame)
        if owner is MISSING:
            return MISSING
        try:
            return getattr(owner, expr.attr, MISSING)
        except Exception:  # noqa: BLE001 - a property that raises names nothing
            return MISSING
    return MISSING


def text(expr: ast.AST) -> str:
    return ast.unparse(expr)


def keyword_origin(filename: str, line: int, keyword: str) -> int | None:
    """The line that chose a call's ``keyword`` argument: the call's own line when it is
    written there, the last assignment of the name before the call when it is a variable
    of the same function (``reduction = "none"`` two lines above ``Loss(reduction=reduction)``)."""
    statement = statement_at(filename, line)
    if statement is None:
        return None
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        for given in node.keywords:
            if given.arg != keyword:
                continue
            if isinstance(given.value, ast.Name):
                return assigned_before(filename, given.value.id, node.lineno) or given.lineno
            return given.value.lineno
    return None


def assigned_before(filename: str, name: str, line: int) -> int | None:
    """The last plain assignment of ``name`` before ``line`` in the function holding it."""
    tree = parsed(filename)
    if tree is None:
        return None
    scopes = [node for node in ast.walk(tree)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.lineno <= line <= (node.end_lineno or node.lineno)]
    scope = max(scopes, key=lambda node: node.lineno) if scopes else tree
    found = None
    for node in ast.walk(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno < line:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and (
                    found is None or node.lineno > found):
                found = node.lineno
    return found
