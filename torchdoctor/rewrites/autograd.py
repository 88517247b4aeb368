"""Rewrites of what autograd keeps: saved tensors, carried graphs, leaves and the loss's shape.

Each one follows from a rule of autograd rather than from a program: a
tensor saved for backward must not be written into (write into a copy);
a graph freed by one backward must not be reached from the next
iteration (cut the carried state); a leaf that requires grad is updated
only outside the graph (``torch.no_grad``); backward without a gradient
needs a scalar (reduce first).
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.rewrites.helpers import helper_edits
from torchdoctor.rewrites.locate import Source, call_name, positional, receiver
from torchdoctor.rewrites.operations import (
    Candidate,
    NotApplicable,
    _method,
    _need,
    _ranked,
    code,
    operation,
)


def _subscript_written(small: cst.BaseSmallStatement) -> cst.BaseExpression | None:
    """``x`` in ``x[:, 0] = v`` / ``x[mask] += v``: the tensor an index assignment writes into."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
    elif isinstance(small, cst.AugAssign):
        target = small.target
    else:
        return None
    if isinstance(target, cst.Subscript) and isinstance(target.value, (cst.Name, cst.Attribute)):
        return target.value
    return None


@operation("clone_before_index_assign")
def clone_before_index_assign(src: Source, line, params, fields) -> list[Candidate]:
    """``x[:, 0] = 0`` → ``x = x.clone()`` then ``x[:, 0] = 0``: the write goes into a copy,
    and the tensor the earlier op saved for backward keeps its version."""
    found = {}
    for statement in src.nodes(cst.SimpleStatementLine):
        for small in statement.body:
            written = _subscript_written(small)
            if written is not None:
                found[statement] = written
                break
    ranked = _ranked(src, _need(list(found), "no index assignment into a tensor in this file"),
                     line)
    candidates = []
    for statement in ranked:
        written = found[statement]
        copy = cst.parse_statement(f"{code(written)} = {code(written)}.clone()\n").with_changes(
            leading_lines=statement.leading_lines)
        moved = statement.with_changes(leading_lines=[])
        candidates.append(Candidate([(statement, cst.FlattenSentinel([copy, moved]))],
                                    f"write into a copy: `{code(written)} = "
                                    f"{code(written)}.clone()` first", src.line(statement)))
    return candidates


def _carried(src: Source, assign: cst.Assign) -> list[cst.Arg]:
    """The arguments of the call on the right that the assignment also binds: ``h`` in
    ``out, h = rnn(x, h)``, the state handed from one iteration to the next."""
    if not isinstance(assign.value, cst.Call):
        return []
    bound = set()
    for target in assign.targets:
        node = target.target
        elements = node.elements if isinstance(node, (cst.Tuple, cst.List)) else [node]
        for element in elements:
            value = element.value if isinstance(element, cst.Element) else element
            if isinstance(value, cst.Name):
                bound.add(value.value)
    return [arg for arg in positional(assign.value)
            if isinstance(arg.value, cst.Name) and arg.value.value in bound]


def _in_loop(src: Source, node: cst.CSTNode) -> bool:
    for ancestor in src.ancestors(node):
        if isinstance(ancestor, (cst.For, cst.While)):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            return False
    return False


@operation("detach_carried_state")
def detach_carried_state(src: Source, line, params, fields) -> list[Candidate]:
    """``out, h = rnn(x, h)`` in a loop → ``out, h = rnn(x, detach_state(h))``: the state goes
    on to the next iteration without the graph the previous backward freed (truncated
    backprop through time). ``detach_state`` also takes an LSTM's tuple and the first None."""
    found = {}
    for assign in src.nodes(cst.Assign, lambda a: _in_loop(src, a)):
        for arg in _carried(src, assign):
            found[assign.value] = (assign.value, arg)
    ranked = _ranked(src, _need(list(found), "no state carried from one loop iteration to the "
                                "next in this file"), line)
    helper = helper_edits(src, "detach_state")
    candidates = []
    for call in ranked:
        _, carried = found[call]
        wrapped = cst.Call(func=cst.Name("detach_state"), args=[cst.Arg(carried.value)])
        new = call.with_changes(args=[a.with_changes(value=wrapped) if a is carried else a
                                      for a in call.args])
        candidates.append(Candidate([(call, new), *helper],
                                    f"detach the carried `{code(carried.value)}` before "
                                    f"`{code(call)}`", src.line(call)))
    return candidates


_REDUCED = {"mean", "sum", "item"}


@operation("reduce_before_backward")
def reduce_before_backward(src: Source, line, params, fields) -> list[Candidate]:
    """``loss.backward()`` on a loss left unreduced (``reduction="none"``) → ``loss =
    loss.mean()`` right before it: backward without a gradient argument needs a single
    number, and so does whatever reads the loss afterwards (``loss.item()``). A loss that is
    not a name is reduced in place: ``(a + b).mean().backward()``."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) == "backward" and not c.args):
        subject = receiver(call)
        if subject is None or (isinstance(subject, cst.Call) and call_name(subject) in _REDUCED):
            continue
        statement = src.statement(call)
        if isinstance(subject, cst.Name) and isinstance(statement, cst.SimpleStatementLine) \
                and isinstance(src.parents.get(statement), (cst.IndentedBlock, cst.Module)):
            name = subject.value
            reduced = cst.parse_statement(f"{name} = {name}.mean()\n").with_changes(
                leading_lines=statement.leading_lines)
            found[statement] = (subject, cst.FlattenSentinel(
                [reduced, statement.with_changes(leading_lines=[])]))
        else:
            found[subject] = (subject, _method(subject, "mean"))
    ranked = _ranked(src, _need(list(found), "no backward() on an unreduced tensor here"), line)
    return [Candidate([(node, found[node][1])], f"reduce `{code(found[node][0])}` to its mean "
                      "before backward", src.line(node)) for node in ranked]


@operation("remove_no_grad")
def remove_no_grad(src: Source, line, params, fields) -> list[Candidate]:
    """A ``with torch.no_grad():`` on the training path (in ``forward``, or in a function that
    calls ``backward``) is dropped and its body kept: under it nothing is recorded, so the
    layers it runs get no gradient and never learn."""
    found = []
    for block in src.nodes(cst.With, lambda w: len(w.items) == 1
                           and isinstance(w.items[0].item, cst.Call)
                           and call_name(w.items[0].item) == "no_grad"
                           and w.items[0].asname is None
                           and isinstance(w.body, cst.IndentedBlock)):
        function = src.function(block)
        if function is None or not (function.name.value == "forward"
                                    or _calls(function, "backward")):
            continue
        found.append(block)
    ranked = _ranked(src, _need(found, "no torch.no_grad() on a training path in this file"),
                     line)
    candidates = []
    for block in ranked:
        body = list(block.body.body)
        body[0] = body[0].with_changes(leading_lines=[*block.leading_lines,
                                                      *body[0].leading_lines])
        candidates.append(Candidate([(block, cst.FlattenSentinel(body))],
                                    "record the graph: drop the `with torch.no_grad():` at line "
                                    f"{src.line(block)}", src.line(block)))
    return candidates


def _calls(node: cst.CSTNode, name: str) -> bool:
    found = []

    class Find(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if call_name(call) == name:
                found.append(call)

    node.visit(Find())
    return bool(found)


def _imports_torch(src: Source) -> bool:
    for node in src.nodes(cst.Import):
        for alias in node.names:
            if code(alias.name) == "torch" and alias.asname is None:
                return True
    return False


@operation("no_grad_update")
def no_grad_update(src: Source, line, params, fields) -> list[Candidate]:
    """A manual in-place update of a parameter (``p.add_(p.grad, alpha=-lr)``,
    ``w -= lr * w.grad``, an init written into a weight) runs under ``torch.no_grad()``:
    autograd refuses in-place writes into a leaf that requires grad, and the update is not
    part of any graph."""
    if not _imports_torch(src):
        raise NotApplicable("the file does not import torch by that name")
    updates = []
    for statement in src.nodes(cst.SimpleStatementLine):
        small = statement.body[0] if len(statement.body) == 1 else None
        inplace = isinstance(small, cst.AugAssign) or (
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
            and call_name(small.value).endswith("_") and not call_name(small.value).startswith("_")
            and _tensor_method(small.value))
        if inplace and not _under_no_grad(src, statement):
            updates.append(statement)
    ranked = _ranked(src, _need(updates, "no in-place update outside torch.no_grad() here"),
                     line)
    candidates = []
    for statement in ranked:
        block = cst.IndentedBlock(body=[statement.with_changes(leading_lines=[])])
        wrapped = cst.With(items=[cst.WithItem(item=cst.parse_expression("torch.no_grad()"))],
                           body=block, leading_lines=statement.leading_lines)
        candidates.append(Candidate([(statement, wrapped)],
                                    f"update outside the graph: `with torch.no_grad():` around "
                                    f"`{code(statement.body[0]).strip()}`", src.line(statement)))
    return candidates


def _tensor_method(call: cst.Call) -> bool:
    """A method called on a value, not a library function (``torch.nn.utils.clip_grad_norm_``,
    ``nn.init.zeros_`` already run without recording)."""
    root = receiver(call)
    while isinstance(root, cst.Attribute):
        root = root.value
    return root is not None and not (isinstance(root, cst.Name) and root.value in _LIBRARIES)


_LIBRARIES = {"torch", "nn", "F", "functional", "init", "np", "numpy", "math"}


def _under_no_grad(src: Source, node: cst.CSTNode) -> bool:
    for ancestor in src.ancestors(node):
        if isinstance(ancestor, cst.With) and any(
                call_name(item.item) in ("no_grad", "inference_mode")
                for item in ancestor.items if isinstance(item.item, cst.Call)):
            return True
    return False
