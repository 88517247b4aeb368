"""The rewrite operations: each finds where it applies and says how to change it.

An operation returns candidates, best first; each candidate is a set of node
replacements and a sentence saying what it changes. It never guesses at
types it cannot see: it rewrites a shape of code that is wrong for the
diagnosed cause whatever the types are (``h *= g`` is in-place whatever
``h`` holds), and verification on a copy decides whether it was the one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import libcst as cst

from torchdoctor.rewrites.locate import (
    Source,
    call_name,
    int_value,
    keyword,
    positional,
    receiver,
)

# At most this many alternative places are offered for one operation.
MAX_CANDIDATES = 3
# Operations that rewrite the arguments of the call that failed, wherever the fix site is.
AT_FAILING_CALL = frozenset({"cast_argument", "move_argument", "shift_argument",
                             "view_as_argument", "squeeze_argument", "resize_before_cat"})


class NotApplicable(Exception):
    """The operation found nothing of its kind in the file: the reason, in one line."""


@dataclass
class Candidate:
    edits: list[tuple[cst.CSTNode, cst.CSTNode]]
    what: str
    line: int


Operation = Callable[[Source, "int | None", Mapping[str, Any], Mapping[str, Any]], list[Candidate]]
OPERATIONS: dict[str, Operation] = {}


def operation(name: str) -> Callable[[Operation], Operation]:
    def register(function: Operation) -> Operation:
        OPERATIONS[name] = function
        return function

    return register


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _ranked(src: Source, nodes: list, line: int | None, prefer: str | None = None) -> list:
    return src.rank(nodes, line, prefer)[:MAX_CANDIDATES]


def _need(nodes: list, reason: str) -> list:
    if not nodes:
        raise NotApplicable(reason)
    return nodes


def _method(value: cst.BaseExpression, name: str, *args: cst.Arg) -> cst.Call:
    """``value.name(args)``, parenthesising a value that needs it (``(y - 1).long()``)."""
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation,
                          cst.Comparison, cst.IfExp, cst.Lambda)) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name(name)), args=list(args))


def _field(params: Mapping[str, Any], fields: Mapping[str, Any], name: str) -> Any:
    """A parameter's value, or the extracted field it names (``wrong: in_features``)."""
    value = params[name]
    if isinstance(value, str) and value in fields:
        return fields[value]
    return value


# --- in-place operations --------------------------------------------------------

_AUG_TO_BIN = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.PowerAssign: cst.Power,
}
# In-place tensor methods whose out-of-place form is the same name without '_'.
_INPLACE_METHODS = {
    "add_", "sub_", "mul_", "div_", "pow_", "clamp_", "clamp_min_", "clamp_max_", "relu_",
    "sigmoid_", "tanh_", "exp_", "log_", "sqrt_", "abs_", "neg_", "masked_fill_",
    "masked_scatter_", "index_fill_", "index_add_", "scatter_", "scatter_add_", "addmm_",
    "addcmul_", "addcdiv_", "lerp_", "t_", "transpose_", "squeeze_", "unsqueeze_",
    "floor_", "ceil_", "round_", "sign_", "nan_to_num_", "fill_diagonal_",
}


@operation("out_of_place")
def out_of_place(src: Source, line, params, fields) -> list[Candidate]:
    """``h *= g`` → ``h = h * g``; ``x.mul_(m)`` → ``x = x.mul(m)``; ``torch.relu_(x)`` → ``torch.relu(x)``."""
    candidates = []
    for statement in src.nodes(cst.SimpleStatementLine):
        for small in statement.body:
            new = _out_of_place_statement(small)
            if new is not None:
                candidates.append((small, new))
    for call in src.nodes(cst.Call, lambda c: call_name(c) in _INPLACE_METHODS):
        parent = src.parents.get(call)
        if isinstance(parent, cst.Expr):
            continue  # handled as a statement above: it must also rebind the name
        name = call_name(call)[:-1]
        candidates.append((call, call.with_changes(func=call.func.with_changes(attr=cst.Name(name)))
                           if isinstance(call.func, cst.Attribute)
                           else call.with_changes(func=cst.Name(name))))
    new_by_old = dict(candidates)
    ranked = _ranked(src, _need(list(new_by_old), "no in-place operation in this file"), line,
                     params.get("prefer_function"))
    return [Candidate([(old, new_by_old[old])], f"make `{code(old).strip()}` out of place",
                      src.line(old)) for old in ranked]


def _out_of_place_statement(small: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
    if isinstance(small, cst.AugAssign) and type(small.operator) in _AUG_TO_BIN:
        target = small.target
        # ``x[i] += v`` rewritten as ``x[i] = x[i] + v`` still writes into x: an index
        # assignment is fixed by clone_before_index_assign.
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return None
        operator = _AUG_TO_BIN[type(small.operator)]()
        value = small.value
        if isinstance(value, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Assign(targets=[cst.AssignTarget(target=target)],
                          value=cst.BinaryOperation(left=target, operator=operator, right=value))
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        if call_name(call) in _INPLACE_METHODS and isinstance(call.func, cst.Attribute):
            target = call.func.value
            if isinstance(target, (cst.Name, cst.Attribute)):
                out = call.with_changes(func=call.func.with_changes(
                    attr=cst.Name(call_name(call)[:-1])))
                return cst.Assign(targets=[cst.AssignTarget(target=target)], value=out)
    return None


@operation("inplace_false")
def inplace_false(src: Source, line, params, fields) -> list[Candidate]:
    """Every ``inplace=True`` in the file becomes ``inplace=False``: one patch, since any of
    them can be the activation whose input autograd saved."""
    edits = []
    for call in src.nodes(cst.Call):
        arg = keyword(call, "inplace")
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True":
            edits.append((arg, arg.with_changes(value=cst.Name("False"))))
    _need(edits, "no inplace=True in this file")
    return [Candidate(edits, f"set inplace=False on {len(edits)} layer(s)", src.line(edits[0][0]))]


# --- shapes ------------------------------------------------------------------------


def _flatten_keep_batch(call: cst.Call) -> cst.Call | None:
    name, args = call_name(call), positional(call)
    if name in ("view", "reshape") and receiver(call) is not None:
        values = [int_value(a.value) for a in args]
        merges = (values == [-1]) or (len(values) == 2 and values[0] == -1
                                      and values[1] is not None and values[1] > 0)
        if merges:
            return call.with_changes(func=call.func.with_changes(attr=cst.Name("flatten")),
                                     args=[cst.Arg(cst.Integer("1"))])
    if name == "flatten" and receiver(call) is not None and not call.args:
        if isinstance(receiver(call), cst.Name) and receiver(call).value == "torch":
            return None
        return call.with_changes(args=[cst.Arg(cst.Integer("1"))])
    if (name == "flatten" and isinstance(receiver(call), cst.Name)
            and receiver(call).value == "torch" and len(call.args) == 1):
        return call.with_changes(args=[call.args[0].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(cst.Integer("1"))])
    if name == "Flatten":
        start = keyword(call, "start_dim") or (args[0] if args else None)
        if start is not None and int_value(start.value) == 0:
            return call.with_changes(args=[a for a in call.args if a is not start])
    return None


@operation("keep_batch_flatten")
def keep_batch_flatten(src: Source, line, params, fields) -> list[Candidate]:
    """A flatten that folds the batch in (``view(-1)``, ``flatten()``, ``Flatten(0)``, or
    ``view(-1, K)`` with the feature count spelled out) → flatten from dimension 1."""
    found = {call: new for call in src.nodes(cst.Call)
             if (new := _flatten_keep_batch(call)) is not None}
    ranked = _ranked(src, _need(list(found), "no flatten that merges the batch in this file"), line)
    return [Candidate([(c, found[c])], f"flatten `{code(c)}` from dimension 1 as "
                      f"`{code(found[c])}`", src.line(c)) for c in ranked]


@operation("batch_from_tensor")
def batch_from_tensor(src: Source, line, params, fields) -> list[Candidate]:
    """``x.view(64, -1)`` → ``x.view(x.size(0), -1)``: the batch size comes from the data."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) in ("view", "reshape")):
        args, subject = positional(call), receiver(call)
        if subject is None or len(args) < 2 or int_value(args[0].value) in (None, -1):
            continue
        size = _method(subject, "size", cst.Arg(cst.Integer("0")))
        found[call] = call.with_changes(args=[args[0].with_changes(value=size), *call.args[1:]])
    ranked = _ranked(src, _need(list(found), "no view with a hard-coded batch size"), line)
    return [Candidate([(c, found[c])], f"take the batch size from the tensor in `{code(c)}`",
                      src.line(c)) for c in ranked]


@operation("view_to_reshape")
def view_to_reshape(src: Source, line, params, fields) -> list[Candidate]:
    """``x.permute(...).view(...)`` → ``.reshape(...)``, which copies when the layout needs it."""
    views = src.nodes(cst.Call, lambda c: call_name(c) == "view" and receiver(c) is not None)
    ranked = _ranked(src, _need(views, "no .view() call in this file"), line)
    return [Candidate([(c, c.with_changes(func=c.func.with_changes(attr=cst.Name("reshape"))))],
                      f"use reshape instead of view in `{code(c)}`", src.line(c)) for c in ranked]


@operation("linear_in_features")
def linear_in_features(src: Source, line, params, fields) -> list[Candidate]:
    """The Linear built for ``wrong`` features gets the number that actually arrives,
    written where that number is spelled out (the call, or the constant it came from)."""
    wrong, right = int(_field(params, fields, "wrong")), int(_field(params, fields, "right"))
    return _size_argument(src, "Linear", "in_features", wrong, right,
                          f"build the Linear for {right} input features instead of {wrong}", line)


@operation("lazy_linear")
def lazy_linear(src: Source, line, params, fields) -> list[Candidate]:
    """``nn.Linear(9216, 128)`` → ``nn.LazyLinear(128)``: in_features measured on the first batch."""
    wrong = int(_field(params, fields, "wrong"))

    def built_with(call: cst.Call) -> bool:
        arg = keyword(call, "in_features") or next(iter(positional(call)), None)
        return arg is not None and (_literal_behind(src, arg.value, wrong) is not None
                                    or _int_of(src, arg.value) == wrong)

    linears = _need(src.nodes(cst.Call, lambda c: call_name(c) == "Linear" and built_with(c)),
                    f"no nn.Linear built with in_features={wrong} in this file")
    candidates = []
    for call in _ranked(src, linears, line):
        size = keyword(call, "in_features") or positional(call)[0]
        kept = [a for a in call.args if a is not size]
        if kept and kept[-1].comma is not cst.MaybeSentinel.DEFAULT:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        func = (call.func.with_changes(attr=cst.Name("LazyLinear"))
                if isinstance(call.func, cst.Attribute) else cst.Name("LazyLinear"))
        candidates.append(Candidate([(call, call.with_changes(func=func, args=kept))],
                                    "let the Linear measure its in_features (nn.LazyLinear)",
                                    src.line(call)))
    return candidates


# --- arguments of the call at the site ----------------------------------------------


def _calls_with_argument(src: Source, line: int | None, index: int) -> list[cst.Call]:
    """Calls on the site's line with that positional argument, outermost first."""
    if line is None:
        raise NotApplicable("no line to rewrite: the failing frame is unknown")
    calls = [c for c in src.nodes(cst.Call)
             if src.line(c) <= line <= src.last_line(c) and len(positional(c)) > index
             and call_name(c) not in ("print", "len", "range", "isinstance", "format")]
    return _need(calls, f"no call with an argument #{index + 1} on line {line}")


def _rewrite_argument(src: Source, line, index: int, make: Callable[[cst.Call], cst.BaseExpression],
                      what: str, needs: int | None = None) -> list[Candidate]:
    """Rewrite argument ``index`` of the calls at the site; ``needs``: the highest
    argument position the rewrite reads."""
    candidates, reasons = [], []
    for call in _calls_with_argument(src, line, max(index, needs or 0))[:MAX_CANDIDATES]:
        arg = positional(call)[index]
        try:
            new_value = make(call)
        except NotApplicable as reason:
            reasons.append(str(reason))
            continue
        new = call.with_changes(args=[a.with_changes(value=new_value) if a is arg else a
                                      for a in call.args])
        candidates.append(Candidate([(call, new)], what.format(arg=code(arg.value).strip(),
                                                               new=code(new_value)), src.line(call)))
    return _need(candidates, "; ".join(reasons))


@operation("cast_argument")
def cast_argument(src: Source, line, params, fields) -> list[Candidate]:
    """``loss_fn(out, y)`` → ``loss_fn(out, y.long())``."""
    index, method = int(params["index"]), str(params["method"])

    def make(call: cst.Call) -> cst.BaseExpression:
        value = positional(call)[index].value
        if isinstance(value, cst.Call) and call_name(value) in ("long", "float", "int", "bool",
                                                                  "double", "half"):
            return value.with_changes(func=value.func.with_changes(attr=cst.Name(method)))
        return _method(value, method)

    return _rewrite_argument(src, line, index, make, "convert `{arg}` with `{new}`")


@operation("move_argument")
def move_argument(src: Source, line, params, fields) -> list[Candidate]:
    """``torch.cat([a, b])``-style calls: the argument follows the other's device."""
    index, like = int(params["index"]), int(params["like"])

    def make(call: cst.Call) -> cst.BaseExpression:
        other = positional(call)[like].value
        device = cst.Attribute(value=other, attr=cst.Name("device"))
        return _method(positional(call)[index].value, "to", cst.Arg(device))

    return _rewrite_argument(src, line, index, make, "move `{arg}` as `{new}`", needs=like)


@operation("shift_argument")
def shift_argument(src: Source, line, params, fields) -> list[Candidate]:
    """``loss_fn(out, y)`` → ``loss_fn(out, y - 1)`` for labels counted from one."""
    index, by = int(params["index"]), int(params["by"])
    operator = cst.Subtract() if by < 0 else cst.Add()

    def make(call: cst.Call) -> cst.BaseExpression:
        return cst.BinaryOperation(left=positional(call)[index].value, operator=operator,
                                   right=cst.Integer(str(abs(by))))

    return _rewrite_argument(src, line, index, make, "shift `{arg}` to `{new}`")


@operation("view_as_argument")
def view_as_argument(src: Source, line, params, fields) -> list[Candidate]:
    """``loss_fn(out, y)`` → ``loss_fn(out, y.view_as(out))``."""
    index, like = int(params["index"]), int(params["like"])

    def make(call: cst.Call) -> cst.BaseExpression:
        other = positional(call)[like].value
        if not isinstance(other, (cst.Name, cst.Attribute, cst.Subscript)):
            raise NotApplicable(f"`{code(other)}` is computed in the call: name it first")
        return _method(positional(call)[index].value, "view_as", cst.Arg(other))

    return _rewrite_argument(src, line, index, make, "reshape `{arg}` as `{new}`", needs=like)


@operation("squeeze_argument")
def squeeze_argument(src: Source, line, params, fields) -> list[Candidate]:
    """``loss_fn(out, y)`` → ``loss_fn(out, y.squeeze(-1))``: targets stored with a trailing
    dimension of one ([N, 1]) where the loss takes one class id per row ([N])."""
    index, dim = int(params["index"]), int(params.get("dim", -1))

    def make(call: cst.Call) -> cst.BaseExpression:
        return _method(positional(call)[index].value, "squeeze", cst.Arg(_expr(str(dim))))

    return _rewrite_argument(src, line, index, make, "squeeze `{arg}` as `{new}`")


@operation("resize_before_cat")
def resize_before_cat(src: Source, line, params, fields) -> list[Candidate]:
    """``torch.cat((skip, up), dim=1)`` → ``torch.cat((skip, F.interpolate(up,
    size=skip.shape[2:])), dim=1)`` for every such concatenation in the function that failed:
    pooling floors an odd size and upsampling doubles it, so every skip connection of a
    U-Net drifts, not only the first one to raise."""
    if line is None:
        raise NotApplicable("no line to rewrite: the failing frame is unknown")
    home = src.function_at(line)
    functional = _functional_name(src)
    edits = []
    for call in src.nodes(cst.Call, lambda c: call_name(c) == "cat" and positional(c)):
        dim = keyword(call, "dim") or (positional(call)[1] if len(positional(call)) > 1 else None)
        parts = positional(call)[0].value
        if (src.function(call) is not home or dim is None or int_value(dim.value) != 1
                or not isinstance(parts, (cst.Tuple, cst.List)) or len(parts.elements) < 2):
            continue
        first = parts.elements[0].value
        if not isinstance(first, (cst.Name, cst.Attribute)):
            continue
        size = f"{code(first)}.shape[2:]"
        elements = [parts.elements[0], *(e.with_changes(value=_expr(
            f"{functional}.interpolate({code(e.value)}, size={size})"))
            for e in parts.elements[1:])]
        edits.append((parts, parts.with_changes(elements=elements)))
    _need(edits, "no concatenation along the channels in the function that failed")
    return [Candidate(edits, f"resize to the skip connection's size before {len(edits)} "
                      "concatenation(s)", src.line(edits[0][0]))]


def _functional_name(src: Source) -> str:
    """The name the file gave ``torch.nn.functional`` (``F``), else the full path."""
    for node in src.nodes((cst.Import, cst.ImportFrom)):
        if isinstance(node.names, cst.ImportStar):
            continue
        prefix = code(node.module) + "." if isinstance(node, cst.ImportFrom) and node.module \
            else ""
        for alias in node.names:
            if prefix + code(alias.name) == "torch.nn.functional" and alias.asname is not None:
                return code(alias.asname.name)
    return "torch.nn.functional"


_CLASS_KEYWORDS = ("num_classes", "num_labels", "n_classes", "nclass", "classes",
                   "out_features")


@operation("head_classes")
def head_classes(src: Source, line, params, fields) -> list[Candidate]:
    """The classifier gets one output per class the labels hold (the largest label + 1):
    ``from_pretrained(name)`` → ``from_pretrained(name, num_labels=N)``, a ``num_classes=K``
    or the ``nn.Linear(d, K)`` built with the head's current ``K`` (``wrong``) → N."""
    right = int(_field(params, fields, "largest")) + 1
    wrong = _field(params, fields, "wrong") if "wrong" in params else None
    wrong = int(wrong) if isinstance(wrong, int) or (isinstance(wrong, str)
                                                     and wrong.isdigit()) else None
    found = {}
    for call in src.nodes(cst.Call):
        if call_name(call) == "from_pretrained" and positional(call):
            given = keyword(call, "num_labels")
            if given is None:
                args = [*call.args[:-1], call.args[-1].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" ")))]
                found[call] = call.with_changes(args=[*args, cst.Arg(
                    keyword=cst.Name("num_labels"), value=cst.Integer(str(right)),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))])
            continue
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in _CLASS_KEYWORDS:
                value = int_value(arg.value)
                if value is not None and value != right and wrong in (None, value):
                    found[arg.value] = cst.Integer(str(right))
        if wrong is not None and call_name(call) == "Linear" and len(positional(call)) > 1:
            literal = _literal_behind(src, positional(call)[1].value, wrong)
            if literal is not None:
                found[literal] = cst.Integer(str(right))
    ranked = _ranked(src, _need(list(found), "no classifier head with its classes written "
                                "out in this file"), line)
    return [Candidate([(n, found[n])], f"build the head for {right} classes: "
                      f"`{code(found[n])}`", src.line(n)) for n in ranked]


# --- what the model or the loss is built from ----------------------------------------


@operation("rename_call")
def rename_call(src: Source, line, params, fields) -> list[Candidate]:
    """Every call of ``from`` calls ``to`` instead (``nn.BCELoss()`` → ``nn.BCEWithLogitsLoss()``)."""
    old, new = str(params["from"]), str(params["to"])
    edits = []
    for call in src.nodes(cst.Call, lambda c: call_name(c) == old):
        func = (call.func.with_changes(attr=cst.Name(new)) if isinstance(call.func, cst.Attribute)
                else cst.Name(new))
        edits.append((call.func, func))
    _need(edits, f"no call of {old} in this file")
    return [Candidate(edits, f"use {new} instead of {old}", src.line(edits[0][0]))]


@operation("drop_softmax")
def drop_softmax(src: Source, line, params, fields) -> list[Candidate]:
    """A softmax at the end of the model, in front of a loss that applies its own: the
    model returns logits. ``F.softmax(x, dim=1)`` → ``x``; ``nn.Softmax(dim=1)`` → ``nn.Identity()``."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) in ("softmax", "Softmax")):
        where = src.function(call)
        if call_name(call) == "Softmax":
            func = (call.func.with_changes(attr=cst.Name("Identity"))
                    if isinstance(call.func, cst.Attribute) else cst.Name("Identity"))
            found[call] = call.with_changes(func=func, args=[])
        elif where is not None and where.name.value == "forward":
            subject = receiver(call)
            if subject is not None and not (isinstance(subject, cst.Name)
                                            and subject.value in ("F", "torch", "functional")):
                found[call] = subject
            elif positional(call):
                found[call] = positional(call)[0].value
    ranked = _ranked(src, _need(list(found), "no softmax inside a model in this file"), line)
    return [Candidate([(c, found[c])], f"return logits: drop `{code(c)}`", src.line(c))
            for c in ranked]


# --- the training loop ------------------------------------------------------------------


@operation("accumulate_item")
def accumulate_item(src: Source, line, params, fields) -> list[Candidate]:
    """``total += loss`` / ``losses.append(loss)`` → keep ``loss.item()``, not the graph."""
    found = {}
    for aug in src.nodes(cst.AugAssign, lambda a: isinstance(a.operator, cst.AddAssign)):
        value = aug.value
        if isinstance(value, (cst.Name, cst.Attribute)) or (
                isinstance(value, cst.Call) and _names_a_loss(value.func)):
            found[aug] = aug.with_changes(value=_method(value, "item"))
    for call in src.nodes(cst.Call, lambda c: call_name(c) == "append" and len(c.args) == 1):
        value = call.args[0].value
        if isinstance(value, cst.Name) and "loss" in value.value.lower():
            found[call] = call.with_changes(args=[call.args[0].with_changes(
                value=_method(value, "item"))])
    ranked = _ranked(src, _need(list(found), "no loss accumulated across iterations"), line)
    return [Candidate([(n, found[n])], f"keep a Python number: `{code(found[n]).strip()}`",
                      src.line(n)) for n in ranked]


def _names_a_loss(func: cst.BaseExpression) -> bool:
    """``criterion(...)``, ``self.loss(...)``, ``F.mse_loss(...)``: a call that returns a loss."""
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return any(word in str(name).lower() for word in ("loss", "criterion"))


@operation("detach_before_numpy")
def detach_before_numpy(src: Source, line, params, fields) -> list[Candidate]:
    """``t.numpy()`` / ``t.cpu().numpy()`` → ``t.detach().cpu().numpy()``: a copy without the
    graph, on the host, whatever device and grad state the tensor had."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) == "numpy" and not c.args):
        subject = receiver(call)
        if subject is None:
            continue
        inner = subject
        if isinstance(inner, cst.Call) and call_name(inner) == "cpu" and not inner.args:
            inner = receiver(inner)
        if isinstance(inner, cst.Call) and call_name(inner) == "detach":
            continue
        found[call] = _method(_method(_method(inner, "detach"), "cpu"), "numpy")
    ranked = _ranked(src, _need(list(found), "no .numpy() call in this file"), line)
    return [Candidate([(c, found[c])], f"detach and copy to the CPU first: `{code(found[c])}`",
                      src.line(c)) for c in ranked]


@operation("construct_then_call")
def construct_then_call(src: Source, line, params, fields) -> list[Candidate]:
    """``nn.CrossEntropyLoss(out, y)`` → ``nn.CrossEntropyLoss()(out, y)``: the tensors went
    to the loss's constructor (as weight, size_average...) instead of to the loss itself."""
    found = {c: cst.Call(func=c.with_changes(args=[]), args=c.args)
             for c in src.nodes(cst.Call, lambda c: call_name(c).endswith("Loss")
                                and len(positional(c)) >= 2)}
    ranked = _ranked(src, _need(list(found), "no loss class given tensors in this file"), line)
    return [Candidate([(c, found[c])], f"build the loss, then call it: `{code(found[c])}`",
                      src.line(c)) for c in ranked]


@operation("first_output")
def first_output(src: Source, line, params, fields) -> list[Candidate]:
    """``output = model(x)`` where the model returns several outputs → ``model(x)[0]``, the
    main one (the logits of a model with auxiliary heads, of a Hugging Face output)."""
    found = {}
    for assign in src.nodes(cst.Assign, lambda a: len(a.targets) == 1
                            and isinstance(a.targets[0].target, cst.Name)
                            and isinstance(a.value, cst.Call)):
        element = cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))
        found[assign.value] = cst.Subscript(value=assign.value, slice=[element])
    if line is None:
        raise NotApplicable("no line to rewrite: the failing frame is unknown")
    on_line = [c for c in found if src.line(c) <= line <= src.last_line(c)]
    calls = _need(on_line, f"no assignment of a call's result on line {line}")
    return [Candidate([(c, found[c])], f"take the first output: `{code(found[c])}`",
                      src.line(c)) for c in calls[:1]]


def _statement_calls(statement: cst.CSTNode, name: str) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if call_name(node) == name:
                found.append(node)

    statement.visit(Collect())
    return found


def _block_of(src: Source, statement: cst.CSTNode) -> cst.IndentedBlock | None:
    parent = src.parents.get(statement)
    return parent if isinstance(parent, cst.IndentedBlock) else None


@operation("zero_grad_before_backward")
def zero_grad_before_backward(src: Source, line, params, fields) -> list[Candidate]:
    """The gradients are cleared right before each backward, wherever zero_grad was
    (between backward and step it wipes what step needs; missing, they accumulate)."""
    backwards = src.nodes(cst.SimpleStatementLine, lambda s: bool(_statement_calls(s, "backward")))
    candidates = []
    for statement in _ranked(src, _need(backwards, "no .backward() call in this file"), line):
        block = _block_of(src, statement)
        if block is None:
            continue
        body = list(block.body)
        clears = [s for s in body if isinstance(s, cst.SimpleStatementLine)
                  and _statement_calls(s, "zero_grad")]
        steps = [c for s in body for c in _statement_calls(s, "step")
                 if receiver(c) is not None]
        if clears:
            clear = clears[0]
            if body.index(clear) < body.index(statement):
                continue  # already before this backward
            body.remove(clear)
        elif steps:
            owner = code(receiver(steps[0]))
            clear = cst.parse_statement(f"{owner}.zero_grad()\n")
        else:
            continue
        position = body.index(statement)
        body.insert(position, clear.with_changes(leading_lines=statement.leading_lines))
        body[position + 1] = statement.with_changes(leading_lines=[])
        what = "clear the gradients right before backward"
        candidates.append(Candidate([(block, block.with_changes(body=body))], what,
                                    src.line(statement)))
    return _need(candidates, "zero_grad already runs before every backward in this file")


def _loops_with(src: Source, name: str) -> list[cst.For | cst.While]:
    return [loop for loop in src.nodes((cst.For, cst.While))
            if _statement_calls(loop.body, name)]


@operation("train_mode_in_loop")
def train_mode_in_loop(src: Source, line, params, fields) -> list[Candidate]:
    """``model.train()`` at the top of the outermost loop that trains (or of the step
    function, when the loop is not in this file), so an evaluation that switched to eval
    mode is undone before every training step."""
    evals = [c for c in src.nodes(cst.Call, lambda c: call_name(c) == "eval" and not c.args)
             if receiver(c) is not None]
    loops = _loops_with(src, "backward")
    places = [loop for loop in loops
              if not any(isinstance(a, (cst.For, cst.While)) and a in loops
                         for a in src.ancestors(loop))]
    if not places:
        places = [f for f in src.nodes(cst.FunctionDef) if _statement_calls(f.body, "backward")]
    candidates = []
    for place in _need(places, "no training loop or step with backward() in this file"):
        body = list(place.body.body)
        start = 1 if body and _is_docstring(body[0]) else 0
        if len(body) > start and _statement_calls(body[start], "train"):
            continue
        owner = _model_in(src, place, evals)
        body.insert(start, cst.parse_statement(f"{owner}.train()\n"))
        where = "loop" if isinstance(place, (cst.For, cst.While)) else f"{place.name.value}()"
        candidates.append(Candidate([(place.body, place.body.with_changes(body=body))],
                                    f"call {owner}.train() at the start of {where}",
                                    src.line(place)))
    return _need(_ranked_candidates(candidates, line)[:MAX_CANDIDATES],
                 "every training step already starts with train()")


_MODEL_NAMES = ("model", "net", "network", "module")


def _model_in(src: Source, place: cst.CSTNode, evals: list[cst.Call]) -> str:
    """The name the model has where train() goes: a parameter of the step function named
    like a model, else what eval() was called on when that name is visible there (not
    ``self.encoder`` from another class's method), else ``model``."""
    function = place if isinstance(place, cst.FunctionDef) else src.function(place)
    names = [p.name.value for p in function.params.params] if function else []
    for name in names:
        if name in _MODEL_NAMES or "model" in name:
            return name
    for call in evals:
        root = receiver(call)
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and (root.value != "self" or "self" in names):
            return code(receiver(call))
    return "model"


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


@operation("step_after_backward")
def step_after_backward(src: Source, line, params, fields) -> list[Candidate]:
    """``optimizer.step()`` right after a backward that no step follows."""
    candidates = []
    for statement in src.nodes(cst.SimpleStatementLine,
                               lambda s: bool(_statement_calls(s, "backward"))):
        block = _block_of(src, statement)
        function = src.function(statement)
        if block is None or any(_statement_calls(s, "step") for s in block.body):
            continue
        clears = [receiver(c) for s in block.body for c in _statement_calls(s, "zero_grad")]
        names = [p.name.value for p in function.params.params] if function else []
        owner = (code(clears[0]) if clears and clears[0] is not None
                 else next((n for n in names if n in ("optimizer", "optim", "opt")), None))
        if owner is None:
            continue
        body = list(block.body)
        body.insert(body.index(statement) + 1, cst.parse_statement(f"{owner}.step()\n"))
        candidates.append(Candidate([(block, block.with_changes(body=body))],
                                    f"call {owner}.step() after backward", src.line(statement)))
    return _need(_ranked_candidates(candidates, line), "every backward is followed by a step")


_OPTIMIZERS = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
               "RAdam", "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor"}


@operation("optimizer_over_model")
def optimizer_over_model(src: Source, line, params, fields) -> list[Candidate]:
    """``SGD(model.backbone.parameters())`` → ``SGD(model.parameters())``: every trained
    layer is in the optimizer."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) in _OPTIMIZERS and positional(c)):
        first = positional(call)[0].value
        if (isinstance(first, cst.Call) and call_name(first) == "parameters"
                and isinstance(receiver(first), cst.Attribute)):
            root = receiver(first)
            while isinstance(root, cst.Attribute):
                root = root.value
            found[first] = _method(root, "parameters")
    ranked = _ranked(src, _need(list(found), "no optimizer built over a part of a model"), line)
    return [Candidate([(c, found[c])], f"optimize `{code(found[c])}` instead of `{code(c)}`",
                      src.line(c)) for c in ranked]


@operation("optimizer_after_model")
def optimizer_after_model(src: Source, line, params, fields) -> list[Candidate]:
    """``opt = SGD(model.parameters())`` built before the model is replaced or changed
    (``model = prune(model)``, ``model.fc = ...``, ``model.to(device)``) moves after the last
    such change: the optimizer holds the parameter tensors it was given, not the model."""
    candidates = []
    for statement in src.nodes(cst.SimpleStatementLine, lambda s: len(s.body) == 1
                               and isinstance(s.body[0], cst.Assign)):
        value = statement.body[0].value
        owner = _optimized_model(value)
        block = _block_of(src, statement)
        if owner is None or block is None:
            continue
        body = list(block.body)
        later = [s for s in body[body.index(statement) + 1:] if _changes_model(s, owner)]
        if not later:
            continue
        body.remove(statement)
        body.insert(body.index(later[-1]) + 1, statement.with_changes(leading_lines=[]))
        candidates.append(Candidate([(block, block.with_changes(body=body))],
                                    f"build the optimizer after the last change to `{owner}`",
                                    src.line(statement)))
    return _need(_ranked_candidates(candidates, line),
                 "no optimizer built before its model is changed in this file")


def _optimized_model(value: cst.BaseExpression) -> str | None:
    """``model`` in ``SGD(model.parameters(), ...)``."""
    if not (isinstance(value, cst.Call) and call_name(value) in _OPTIMIZERS and positional(value)):
        return None
    first = positional(value)[0].value
    if isinstance(first, cst.Call) and call_name(first) == "parameters" \
            and isinstance(receiver(first), cst.Name):
        return receiver(first).value
    return None


def _changes_model(statement: cst.CSTNode, owner: str) -> bool:
    """A statement that rebinds the model, sets one of its attributes, or moves it."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                names = target.target.elements if isinstance(target.target, cst.Tuple) \
                    else [target.target]
                for name in names:
                    node = name.value if isinstance(name, cst.Element) else name
                    while isinstance(node, cst.Attribute):
                        node = node.value
                    if isinstance(node, cst.Name) and node.value == owner:
                        return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and call_name(small.value) in ("to", "cuda", "cpu", "half", "double") \
                and isinstance(receiver(small.value), cst.Name) \
                and receiver(small.value).value == owner:
            return True
    return False


@operation("remove_detach")
def remove_detach(src: Source, line, params, fields) -> list[Candidate]:
    """A ``.detach()`` inside forward cuts the layers before it off from the loss."""
    found = {c: receiver(c) for c in src.nodes(cst.Call, lambda c: call_name(c) in (
        "detach", "detach_") and not c.args and receiver(c) is not None)
        if (f := src.function(c)) is not None and f.name.value == "forward"}
    ranked = _ranked(src, _need(list(found), "no detach() inside a forward in this file"), line)
    return [Candidate([(c, found[c])], f"keep the graph: drop `.detach()` from `{code(c)}`",
                      src.line(c)) for c in ranked]


@operation("defer_step")
def defer_step(src: Source, line, params, fields) -> list[Candidate]:
    """An ``opt.step()`` between two backward passes through one graph moves after the last
    of them: the step rewrites parameters in place that the later backward still needs."""
    candidates = []
    blocks = {src.parents.get(s) for s in src.nodes(
        cst.SimpleStatementLine, lambda s: bool(_statement_calls(s, "step")))}
    for block in blocks:
        if not isinstance(block, cst.IndentedBlock):
            continue
        body = list(block.body)
        backwards = [i for i, s in enumerate(body) if _statement_calls(s, "backward")]
        if len(backwards) < 2:
            continue
        last = backwards[-1]
        early = [s for i, s in enumerate(body) if backwards[0] < i < last
                 and isinstance(s, cst.SimpleStatementLine) and _statement_calls(s, "step")]
        if not early:
            continue
        rest = [s for s in body if s not in early]
        position = rest.index(body[last]) + 1
        moved = [s.with_changes(leading_lines=[]) for s in early]
        rest[position:position] = moved
        owners = ", ".join(code(s.body[0]).strip() for s in early)
        candidates.append(Candidate([(block, block.with_changes(body=rest))],
                                    f"call {owners} after the last backward", src.line(early[0])))
    return _need(_ranked_candidates(candidates, line),
                 "no optimizer step between two backward passes in this file")


@operation("lower_learning_rate")
def lower_learning_rate(src: Source, line, params, fields) -> list[Candidate]:
    """The optimizer's ``lr=`` written out becomes the best rate a sweep measured
    (``best``: the field holding it), or is divided by ``factor`` (10 by default)."""
    factor = float(params.get("factor", 10))
    best = _field(params, fields, "best") if "best" in params else None
    best = float(best) if isinstance(best, (int, float)) and best > 0 else None
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) in _OPTIMIZERS):
        arg = keyword(call, "lr") or (positional(call)[1] if len(positional(call)) > 1 else None)
        if arg is not None and isinstance(arg.value, (cst.Float, cst.Integer)):
            value = best or float(arg.value.value.replace("_", "")) / factor
            found[arg.value] = cst.Float(f"{value:g}" if "e" in f"{value:g}" or "." in f"{value:g}"
                                         else f"{value:g}.0")
    ranked = _ranked(src, _need(list(found), "no optimizer with its lr written out"), line)
    return [Candidate([(c, found[c])], f"lower the learning rate from {code(c)} to "
                      f"{code(found[c])}", src.line(c)) for c in ranked]


# --- checkpoints and data ----------------------------------------------------------------


@operation("strip_prefix_on_load")
def strip_prefix_on_load(src: Source, line, params, fields) -> list[Candidate]:
    """``model.load_state_dict(sd)`` → load ``sd`` with the wrapper's prefix stripped."""
    prefix = str(_field(params, fields, "prefix"))
    loads = [c for c in src.nodes(cst.Call, lambda c: call_name(c) == "load_state_dict")
             if positional(c)]
    candidates = []
    for call in _ranked(src, _need(loads, "no load_state_dict call in this file"), line):
        state = positional(call)[0]
        stripped = _expr(f"{{k.removeprefix({json.dumps(prefix)}): v for k, v in "
                         f"{code(_method(state.value, 'items'))}}}")
        new = call.with_changes(args=[state.with_changes(value=stripped) if a is state else a
                                      for a in call.args])
        candidates.append(Candidate([(call, new)], f"strip {prefix!r} from the keys before "
                                    "loading", src.line(call)))
    return candidates


@operation("keep_matching_sizes")
def keep_matching_sizes(src: Source, line, params, fields) -> list[Candidate]:
    """``model.load_state_dict(sd)`` → ``model.load_state_dict(keep_matching_sizes(model, sd))``:
    only the tensors whose size differs from the model's (a head built for another number
    of classes) keep the model's fresh values; every other key still loads strictly."""
    from torchdoctor.rewrites.helpers import helper_edits

    loads = [c for c in src.nodes(cst.Call, lambda c: call_name(c) == "load_state_dict")
             if positional(c) and receiver(c) is not None]
    ranked = _ranked(src, _need(loads, "no model.load_state_dict(...) call in this file"), line)
    helper = helper_edits(src, "keep_matching_sizes")
    candidates = []
    for call in ranked:
        state = positional(call)[0]
        kept = cst.Call(func=cst.Name("keep_matching_sizes"), args=[
            cst.Arg(receiver(call), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(state.value)])
        new = call.with_changes(args=[state.with_changes(value=kept) if a is state else a
                                      for a in call.args])
        candidates.append(Candidate([(call, new), *helper], "load the checkpoint except the "
                                    "tensors whose size differs from the model's",
                                    src.line(call)))
    return candidates


@operation("map_location_cpu")
def map_location_cpu(src: Source, line, params, fields) -> list[Candidate]:
    """``torch.load(path)`` → ``torch.load(path, map_location="cpu")``."""
    loads = [c for c in src.nodes(cst.Call, lambda c: call_name(c) == "load")
             if isinstance(receiver(c), cst.Name) and receiver(c).value == "torch"
             and keyword(c, "map_location") is None]
    candidates = []
    for call in _ranked(src, _need(loads, "no torch.load without map_location here"), line):
        args = list(call.args)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(cst.Arg(keyword=cst.Name("map_location"), value=cst.SimpleString('"cpu"'),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace(""))))
        candidates.append(Candidate([(call, call.with_changes(args=args))],
                                    "load the checkpoint onto the CPU", src.line(call)))
    return candidates


@operation("cast_source")
def cast_source(src: Source, line, params, fields) -> list[Candidate]:
    """Where a tensor is made from data (``torch.from_numpy``, ``torch.tensor``, ``.double()``),
    give it the dtype the model computes in."""
    method = str(params["method"])
    makers = ("from_numpy", "tensor", "as_tensor", "Tensor", "double", "DoubleTensor", "full",
              "ones", "zeros", "empty", "arange", "full_like", "ones_like", "zeros_like")
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) in makers):
        parent = src.parents.get(call)
        if isinstance(parent, cst.Attribute):
            continue  # already followed by a conversion or a method
        if call_name(call) == "double":
            found[call] = call.with_changes(func=call.func.with_changes(attr=cst.Name(method)))
        elif keyword(call, "dtype") is None:
            found[call] = _method(call, method)
    ranked = _ranked(src, _need(list(found), "no tensor made from data in this file"), line)
    return [Candidate([(c, found[c])], f"convert where the tensor is made: `{code(found[c])}`",
                      src.line(c)) for c in ranked]


# --- sizes spelled out as constants ---------------------------------------------------


def _literal_behind(src: Source, expr: cst.BaseExpression, value: int,
                    hops: int = 3) -> cst.BaseExpression | None:
    """The integer literal that gives ``expr`` its value, following names to their
    assignment or parameter default (``nn.Embedding(vocab_size, d)`` ← ``vocab_size=VOCAB``
    ← ``VOCAB = 1000``): the place where that number is written is the place to fix."""
    if int_value(expr) == value:
        return expr
    if not isinstance(expr, cst.Name) or hops == 0:
        return None
    name = expr.value
    for assign in src.nodes(cst.Assign):
        for target in assign.targets:
            if isinstance(target.target, cst.Name) and target.target.value == name:
                found = _literal_behind(src, assign.value, value, hops - 1)
                if found is not None:
                    return found
    for param in src.nodes(cst.Param, lambda p: p.name.value == name and p.default is not None):
        found = _literal_behind(src, param.default, value, hops - 1)
        if found is not None:
            return found
    return None


_ARITHMETIC = {cst.Multiply: lambda a, b: a * b, cst.Add: lambda a, b: a + b,
               cst.Subtract: lambda a, b: a - b, cst.FloorDivide: lambda a, b: a // b}


def _int_of(src: Source, expr: cst.BaseExpression, hops: int = 3) -> int | None:
    """The integer an expression of constants comes to, following names to their assignment
    or default and ``self.NAME`` to the class attribute (``512 * self.fc_scale`` with
    ``fc_scale = 7 * 7`` is 25088); None when any part is not a constant."""
    value = int_value(expr)
    if value is not None or hops == 0:
        return value
    if isinstance(expr, cst.BinaryOperation):
        left, right = _int_of(src, expr.left, hops), _int_of(src, expr.right, hops)
        combine = _ARITHMETIC.get(type(expr.operator))
        if left is None or right is None or combine is None or (
                isinstance(expr.operator, cst.FloorDivide) and right == 0):
            return None
        return combine(left, right)
    name = expr.value if isinstance(expr, cst.Name) else (
        expr.attr.value if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)
        and expr.value.value == "self" else None)
    if name is None:
        return None
    for assign in src.nodes(cst.Assign):
        for target in assign.targets:
            bound = target.target
            if (isinstance(bound, cst.Name) and bound.value == name) or (
                    isinstance(bound, cst.Attribute) and bound.attr.value == name
                    and isinstance(expr, cst.Attribute)):
                found = _int_of(src, assign.value, hops - 1)
                if found is not None:
                    return found
    if isinstance(expr, cst.Name):
        for param in src.nodes(cst.Param, lambda p: p.name.value == name and p.default):
            found = _int_of(src, param.default, hops - 1)
            if found is not None:
                return found
    return None


def _size_argument(src: Source, layer: str, keyword_name: str, wrong: int, right: int,
                   what: str, line: int | None) -> list[Candidate]:
    """The literal ``wrong`` that sized a ``layer`` (its first argument) becomes ``right``."""
    found = {}
    for call in src.nodes(cst.Call, lambda c: call_name(c) == layer):
        arg = keyword(call, keyword_name) or next(iter(positional(call)), None)
        literal = _literal_behind(src, arg.value, wrong) if arg is not None else None
        if literal is not None and literal not in found.values():
            found[call] = literal
    calls = _ranked(src, _need(list(found), f"no {layer} sized with {wrong} written out in this "
                               "file"), line)
    return [Candidate([(found[c], cst.Integer(str(right)))], what, src.line(found[c]))
            for c in calls]


@operation("conv_in_channels")
def conv_in_channels(src: Source, line, params, fields) -> list[Candidate]:
    """The convolution built for ``wrong`` input channels takes the ``right`` ones that arrive."""
    wrong, right = int(_field(params, fields, "wrong")), int(_field(params, fields, "right"))
    candidates = []
    for layer in ("Conv2d", "Conv1d", "Conv3d"):
        try:
            candidates += _size_argument(src, layer, "in_channels", wrong, right,
                                         f"build the {layer} for {right} input channels "
                                         f"instead of {wrong}", line)
        except NotApplicable:
            continue
    return _need(candidates, f"no convolution built with in_channels={wrong} written out")


@operation("embedding_rows")
def embedding_rows(src: Source, line, params, fields) -> list[Candidate]:
    """The Embedding table gets a row for every id that arrives (largest id + 1)."""
    wrong, largest = int(_field(params, fields, "wrong")), int(_field(params, fields, "largest"))
    return _size_argument(src, "Embedding", "num_embeddings", wrong, largest + 1,
                          f"size the embedding table for ids up to {largest} "
                          f"({largest + 1} rows, not {wrong})", line)


@operation("sum_losses_one_backward")
def sum_losses_one_backward(src: Source, line, params, fields) -> list[Candidate]:
    """Two ``loss.backward()`` through one graph → ``(loss_a + loss_b).backward()``: the
    shared part is walked once, and each loss still gets its gradient."""
    candidates = []
    blocks = {src.parents.get(s) for s in src.nodes(
        cst.SimpleStatementLine, lambda s: bool(_statement_calls(s, "backward")))}
    for block in blocks:
        if not isinstance(block, cst.IndentedBlock):
            continue
        body = list(block.body)
        backwards = [s for s in body if isinstance(s, cst.SimpleStatementLine)
                     and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
                     and isinstance(s.body[0].value, cst.Call)
                     and call_name(s.body[0].value) == "backward"
                     and not s.body[0].value.args and receiver(s.body[0].value) is not None]
        if len(backwards) < 2:
            continue
        losses = [receiver(s.body[0].value) for s in backwards]
        total = losses[0]
        for loss in losses[1:]:
            total = cst.BinaryOperation(left=total, operator=cst.Add(), right=loss)
        first = backwards[0]
        merged = first.with_changes(body=[first.body[0].with_changes(
            value=_method(total, "backward"))])
        body = [merged if s is first else s for s in body if s not in backwards[1:]]
        candidates.append(Candidate([(block, block.with_changes(body=body))],
                                    f"sum the {len(losses)} losses and call backward once",
                                    src.line(first)))
    return _need(_ranked_candidates(candidates, line), "no block calls backward() twice")


def _ranked_candidates(candidates: list[Candidate], line: int | None) -> list[Candidate]:
    if line is None:
        return candidates
    return sorted(candidates, key=lambda c: abs(c.line - line))[:MAX_CANDIDATES]


_DOMAIN_EDGE = {"log": "1e-12", "log2": "1e-12", "log10": "1e-12", "sqrt": "0", "rsqrt": "1e-12"}


@operation("clamp_domain")
def clamp_domain(src: Source, line, params, fields) -> list[Candidate]:
    """``torch.log(p)`` → ``torch.log(p.clamp_min(1e-12))``: the argument stays inside the
    function's domain, so a value at the edge gives a large finite number, not -inf or NaN."""
    calls = [c for c in src.nodes(cst.Call, lambda c: call_name(c) in _DOMAIN_EDGE)
             if (positional(c) if isinstance(receiver(c), cst.Name)
                 and receiver(c).value in ("torch", "np", "math") else receiver(c) is not None)]
    calls = _need(calls, "no log or sqrt in this file")
    home = src.function_at(line) if line else None
    # The function that failed, when it takes the log itself; a check that raised on a NaN
    # loss (``if not torch.isfinite(loss): raise``) took it in a function it called, and
    # then every log of the file is clamped (harmless where the argument is not near zero).
    inside = [c for c in calls if home is None or src.function(c) is home]
    edits = []
    for call in inside or calls:
        floor = cst.Float(_DOMAIN_EDGE[call_name(call)]) if "." in _DOMAIN_EDGE[call_name(call)] \
            or "e" in _DOMAIN_EDGE[call_name(call)] else cst.Integer("0")
        subject = receiver(call)
        if isinstance(subject, cst.Name) and subject.value in ("torch", "np", "math"):
            arg = positional(call)[0]
            new = call.with_changes(args=[arg.with_changes(value=_method(
                arg.value, "clamp_min", cst.Arg(floor))) if a is arg else a for a in call.args])
        else:
            new = call.with_changes(func=call.func.with_changes(
                value=_method(subject, "clamp_min", cst.Arg(floor))))
        edits.append((call, new))
    return [Candidate(edits, f"keep the argument of {len(edits)} log/sqrt call(s) inside the "
                      "domain with clamp_min", src.line(edits[0][0]))]


# The operations of the data pipeline and of autograd's bookkeeping live in their own
# modules; importing them registers them here.
from torchdoctor.rewrites import autograd, loading  # noqa: F401
