"""The ``inplace_leaf`` probe: which leaf the failing line wrote in place, and why it did.

"a leaf Variable that requires grad is being used in an in-place operation"
names no tensor. The failing line does: the receiver of an in-place method
(``p.add_(...)``), the target of an augmented assignment (``w -= ...``) or of
an item assignment (``self.weight[0] = 1``). Looked up in the failing frame,
it tells the two causes apart: a leaf that already holds a gradient, or a
line that reads ``.grad``, is a hand-written update after backward; a leaf
without one, written in an ``__init__`` or an init helper, is initialisation.
Either way the fix is that line (run it under ``torch.no_grad()``).
"""

from __future__ import annotations

import ast
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, frames
from torchdoctor.patient.probes._frames import USER, file_kind, frame_info
from torchdoctor.patient.probes._statements import MISSING, lookup, statement_at, text

PROBE_FACTS = ("written", "is_parameter", "has_grad", "reads_grad", "function",
               "updates_after_backward", "initialising")


@probe("inplace_leaf")
@never_raises
def inplace_leaf(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    for frame, line in frames(failing_exception(ctx)):
        if file_kind(frame.f_code.co_filename) != USER:
            continue
        statement = statement_at(frame.f_code.co_filename, line)
        leaf = _written_leaf(statement, frame) if statement is not None else None
        if leaf is None:
            continue
        name, tensor = leaf
        function = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        facts.update(written=name, is_parameter=isinstance(tensor, nn.Parameter),
                     has_grad=tensor.grad is not None, function=function,
                     reads_grad=any(isinstance(node, ast.Attribute) and node.attr == "grad"
                                    for node in ast.walk(statement)))
        facts["updates_after_backward"] = facts["has_grad"] or facts["reads_grad"]
        facts["initialising"] = not facts["updates_after_backward"] and "init" in (
            frame.f_code.co_name.lower())
        site = frame_info(frame.f_code.co_filename, line, function)
        site["module"] = None
        return {**result("fail", _summary(facts, line), facts,
                         {"module": None, "op": None, "file": site["file"], "line": line}),
                "raised_at": site, "fix_at": site}
    return result("inconclusive", "no user line of the failure writes in place into a leaf"
                  " tensor that requires grad", facts)


def _written_leaf(statement: ast.stmt, frame: Any) -> tuple[str, torch.Tensor] | None:
    """The first tensor the statement writes in place that is a leaf requiring grad."""
    for expr in _written(statement):
        value = lookup(expr, frame)
        if value is not MISSING and isinstance(value, torch.Tensor) and value.is_leaf and (
                value.requires_grad):
            return text(expr), value
    return None


def _written(statement: ast.stmt) -> list[ast.expr]:
    """What a statement changes in place: method receivers, augmented and item targets."""
    written: list[ast.expr] = []
    if isinstance(statement, ast.AugAssign):
        written.append(_base(statement.target))
    if isinstance(statement, ast.Assign):
        written += [t.value for t in statement.targets if isinstance(t, ast.Subscript)]
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr.endswith("_") and not node.func.attr.startswith("__")):
            written.append(node.func.value)
    return written


def _base(target: ast.expr) -> ast.expr:
    return target.value if isinstance(target, ast.Subscript) else target


def _summary(facts: dict[str, Any], line: int) -> str:
    what = "parameter" if facts["is_parameter"] else "leaf tensor"
    if facts["updates_after_backward"]:
        why = ("it already holds a gradient: a hand-written update after backward"
               if facts["has_grad"] else "the line reads .grad: a hand-written update")
    elif facts["initialising"]:
        why = f"written in {facts['function']} before any backward: initialisation"
    else:
        why = "it has no gradient yet"
    return f"line {line} writes the {what} {facts['written']} in place; {why}"
