"""The ``sampled_ids`` probe: token ids a model sampled from its own scores, wider than its table.

"index out of range in self" at an Embedding says an id reached past the
table. When the ids were sampled from the model's own output (a
``generate`` loop: scores → softmax → multinomial or argmax → fed back),
the table is not too small for some tokenizer: the model scores more
classes than it has rows, so sampling picks ids no row exists for. The
failing frames hold the Embedding, its ids and the model; the model is run
once more on ids folded into the table's range (under ``no_grad``, its state
kept), and the width of what it returns is compared with the table. The fix
is where the module that set that width was built (an embedding's
``embedding_dim`` read as the number of classes, an output head of the
wrong size).
"""

from __future__ import annotations

import ast
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, frames
from torchdoctor.patient.probes._frames import USER, file_kind, frame_info
from torchdoctor.patient.probes._statements import parsed

PROBE_FACTS = ("num_embeddings", "max_id", "output_width", "widest_module",
               "output_wider_than_table", "ids_within_output", "ids_fed_back")
# Calls that turn scores into ids.
_SAMPLERS = frozenset({"multinomial", "argmax", "topk", "sample", "categorical"})


@probe("sampled_ids")
@never_raises
def sampled_ids(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    found = _lookup(exc)
    if found is None:
        return result("inconclusive", "no Embedding lookup in the failing frames", facts)
    embedding, ids, model, forward, outer = found
    facts.update(num_embeddings=embedding.num_embeddings, max_id=int(ids.max()))
    if facts["max_id"] < embedding.num_embeddings:
        return result("pass", "every id at the Embedding fits its table", facts)
    measured = _output_width(model, forward, ids, embedding.num_embeddings)
    if measured is None:
        return result("inconclusive", "the model did not return a tensor of scores when run"
                      " again on ids within its table", facts)
    facts["output_width"], widest = measured
    facts["widest_module"] = widest
    facts["output_wider_than_table"] = facts["output_width"] > facts["num_embeddings"]
    facts["ids_within_output"] = facts["max_id"] < facts["output_width"]
    facts["ids_fed_back"] = outer is not None and _fed_back(outer, ids)
    built = _built_at(model, widest) if facts["output_wider_than_table"] else None
    summary = (f"the model returns {facts['output_width']} scores per token for a table of"
               f" {facts['num_embeddings']} rows; the largest id is {facts['max_id']}")
    if facts["ids_fed_back"]:
        summary += f", sampled from those scores in {outer.f_code.co_name}()"
    status = "fail" if facts["output_wider_than_table"] else "pass"
    return {**result(status, summary, facts), **({"fix_at": built} if built else {})}


def _lookup(exc: BaseException | None) -> tuple | None:
    """The Embedding and its ids, the outermost module running that holds it with the
    frame of its forward, and the user frame that called that module."""
    embedding = ids = model = forward = outer = None
    for frame, _ in frames(exc):
        owner = frame.f_locals.get("self")
        if embedding is None:
            value = frame.f_locals.get("input")
            if isinstance(owner, nn.Embedding) and isinstance(value, torch.Tensor):
                embedding, ids = owner, value
            continue
        if frame.f_code.co_name == "forward" and isinstance(owner, nn.Module) and any(
                m is embedding for m in owner.modules()):
            model, forward, outer = owner, frame, None
        elif model is not None and outer is None and file_kind(frame.f_code.co_filename) == USER:
            outer = frame
    if embedding is None or model is None:
        return None
    return embedding, ids, model, forward, outer


def _output_width(model: nn.Module, forward: Any, ids: torch.Tensor, rows: int
                  ) -> tuple[int, str | None] | None:
    """The last dimension of what the model returns, and the module that last returned a
    tensor that wide, on the failing call's arguments with the ids folded into range."""
    code = forward.f_code
    names = code.co_varnames[1:code.co_argcount]
    args = [forward.f_locals.get(name) for name in names]
    args = [ids.remainder(rows) if arg is ids else arg for arg in args]
    paths = {id(m): name for name, m in model.named_modules()}
    widths: list[tuple[int, str]] = []

    def seen(module: nn.Module, _inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor) and output.dim() and next(
                module.children(), None) is None:
            widths.append((output.shape[-1], paths.get(id(module), "")))

    handles = [m.register_forward_hook(seen) for m in model.modules()]
    try:
        with preserved(model, parameters=False), torch.no_grad():
            output = model(*args)
    finally:
        for handle in handles:
            handle.remove()
    scores = output if isinstance(output, torch.Tensor) else next(
        (item for item in (output if isinstance(output, (tuple, list)) else ())
         if isinstance(item, torch.Tensor)), None)
    if scores is None or not scores.dim():
        return None
    width = scores.shape[-1]
    widest = next((name for w, name in reversed(widths) if w == width), None)
    return width, widest


def _fed_back(frame: Any, ids: torch.Tensor) -> bool:
    """The caller passes the model ids derived from its own sampling call: the name that
    holds ``ids`` in the caller is assigned (directly or through other names) from an
    expression with multinomial, argmax, topk … in the same function."""
    held = {name for name, value in list(frame.f_locals.items()) if value is ids}
    tree = parsed(frame.f_code.co_filename)
    scope = next((node for node in ast.walk(tree) if isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == frame.f_code.co_name
        and node.lineno <= frame.f_lineno <= (node.end_lineno or node.lineno)), None) \
        if tree is not None else None
    if not held or scope is None:
        return False
    assignments = [node for node in ast.walk(scope) if isinstance(node, ast.Assign)]
    derived: set[str] = set()
    while True:
        grown = set(derived)
        for node in assignments:
            reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            samples = any(isinstance(n, ast.Call) and _called(n) in _SAMPLERS
                          for n in ast.walk(node.value))
            if samples or reads & derived:
                grown |= {n.id for t in node.targets for n in ast.walk(t)
                          if isinstance(n, ast.Name)}
        if grown == derived:
            return bool(held & derived)
        derived = grown


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _built_at(model: nn.Module, path: str | None) -> dict[str, Any] | None:
    """Where the module at ``path`` was built: the ``self.<name> = ...`` line in its
    parent's ``__init__``."""
    if not path:
        return None
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    init = getattr(type(parent).__init__, "__code__", None)
    if init is None or file_kind(init.co_filename) != USER:
        return None
    tree = parsed(init.co_filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and init.co_firstlineno <= node.lineno:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == name and isinstance(
                    t.value, ast.Name) and t.value.id == "self" for t in targets) and (
                    _inside(tree, init.co_firstlineno, node.lineno)):
                found = frame_info(init.co_filename, node.lineno, type(parent).__qualname__)
                found["module"] = path
                return found
    return None


def _inside(tree: ast.AST, first: int, line: int) -> bool:
    """``line`` lies in the function that starts at ``first``."""
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and node.lineno <= first <= (node.body[0].lineno if node.body else node.lineno)
               and node.lineno <= line <= (node.end_lineno or node.lineno)
               for node in ast.walk(tree))
