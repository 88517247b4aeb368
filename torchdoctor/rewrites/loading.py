"""Rewrites where the data comes from: the DataLoader and the code that reads each item.

A batch breaks in the model because of how it was assembled: a short last
batch (BatchNorm over one sample, a ``view`` with the batch size spelled
out), items of different lengths that ``default_collate`` cannot stack,
images read with a channel count the model was not built for, or a lambda
that spawn-started workers cannot unpickle. The fix belongs at the loader
or the reader, not at the layer that raised.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.rewrites.helpers import helper_edits, insertion
from torchdoctor.rewrites.locate import Source, call_name, keyword, positional, receiver
from torchdoctor.rewrites.operations import (
    Candidate,
    NotApplicable,
    _field,
    _method,
    _need,
    _ranked,
    code,
    operation,
)


def _keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(keyword=cst.Name(name), value=value,
                   equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                         whitespace_after=cst.SimpleWhitespace("")))


def _with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """The call with ``name=value`` set: replaced where it is given, appended where not."""
    given = keyword(call, name)
    if given is not None:
        return call.with_changes(args=[a.with_changes(value=value) if a is given else a
                                       for a in call.args])
    args, added = list(call.args), _keyword_arg(name, value)
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(comma=_comma())
        else:  # a trailing comma: the new argument goes on a line of its own like the others
            trailing = last.comma.whitespace_after
            between = args[-2].comma.whitespace_after if len(args) > 1 else None
            if isinstance(trailing, cst.ParenthesizedWhitespace) and isinstance(
                    between, cst.ParenthesizedWhitespace):
                args[-1] = last.with_changes(comma=last.comma.with_changes(
                    whitespace_after=trailing.with_changes(last_line=between.last_line)))
                added = added.with_changes(comma=last.comma.with_changes(
                    whitespace_after=trailing.with_changes(first_line=cst.TrailingWhitespace(),
                                                           empty_lines=[])))
            else:
                added = added.with_changes(comma=last.comma)
                args[-1] = last.with_changes(comma=_comma())
    return call.with_changes(args=[*args, added])


def _loaders(src: Source) -> list[cst.Call]:
    return src.nodes(cst.Call, lambda c: call_name(c) == "DataLoader")


@operation("drop_last_batch")
def drop_last_batch(src: Source, line, params, fields) -> list[Candidate]:
    """``DataLoader(ds, batch_size=B)`` → ``DataLoader(ds, batch_size=B, drop_last=True)``: the
    last batch holds ``len(ds) % B`` items, and one item breaks BatchNorm in training while a
    size spelled out in a ``view`` breaks on any short batch."""
    found = {}
    for call in _loaders(src):
        given = keyword(call, "drop_last")
        if given is not None and isinstance(given.value, cst.Name) and given.value.value == "True":
            continue
        found[call] = _with_keyword(call, "drop_last", cst.Name("True"))
    ranked = _ranked(src, _need(list(found), "no DataLoader that keeps its short last batch"),
                     line)
    return [Candidate([(c, found[c])], "drop the short last batch (drop_last=True)",
                      src.line(c)) for c in ranked]


@operation("pad_collate")
def pad_collate(src: Source, line, params, fields) -> list[Candidate]:
    """A DataLoader with the default collate gets ``collate_fn=pad_collate``, a module-level
    function that pads the fields whose length varies between items (``pad_sequence``) and
    stacks the others as ``default_collate`` does."""
    loaders = [c for c in _loaders(src) if keyword(c, "collate_fn") is None
               and len(positional(c)) < 5]  # the sixth positional argument is collate_fn
    ranked = _ranked(src, _need(loaders, "no DataLoader with the default collate_fn"), line)
    helper = helper_edits(src, "pad_collate")
    return [Candidate([(c, _with_keyword(c, "collate_fn", cst.Name("pad_collate"))), *helper],
                      "pad variable-length items in a collate_fn (pad_sequence)", src.line(c))
            for c in ranked]


# PIL's image modes and the channels each gives.
_MODES = {"1": 1, "L": 1, "P": 1, "I": 1, "F": 1, "LA": 2, "RGB": 3, "YCbCr": 3, "LAB": 3,
          "HSV": 3, "RGBA": 4, "CMYK": 4}
_MODE_FOR = {1: "L", 3: "RGB", 4: "RGBA"}


def _mode_string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str) and value in _MODES:
            return value
    return None


@operation("image_mode")
def image_mode(src: Source, line, params, fields) -> list[Candidate]:
    """Read images with the channels the model takes: ``Image.open(p)`` →
    ``Image.open(p).convert("RGB")``, ``.convert("L")`` → ``.convert("RGB")``, and a mode
    named at the reader's call (``load(path, "RGB")``) becomes the one wanted."""
    channels = int(_field(params, fields, "channels"))
    mode = _MODE_FOR.get(channels)
    if mode is None:
        raise NotApplicable(f"no image mode gives {channels} channels")
    found = {}
    for call in src.nodes(cst.Call):
        parent = src.parents.get(call)
        if call_name(call) == "open" and isinstance(receiver(call), cst.Name) \
                and receiver(call).value == "Image":
            following = src.parents.get(parent) if isinstance(parent, cst.Attribute) else None
            if not (isinstance(following, cst.Call) and call_name(following) == "convert"):
                found[call] = _method(call, "convert", cst.Arg(cst.SimpleString(f'"{mode}"')))
            continue
        for arg in positional(call) + [a for a in call.args if a.keyword
                                       and a.keyword.value in ("mode", "pilmode")]:
            current = _mode_string(arg.value)
            if current is not None and _MODES[current] != channels:
                quote = arg.value.quote
                found[arg.value] = cst.SimpleString(f"{quote}{mode}{quote}")
    ranked = _ranked(src, _need(list(found), "no image read or converted in this file"), line)
    return [Candidate([(n, found[n])], f"read the images as {mode} ({channels} channels): "
                      f"`{code(found[n])}`", src.line(n)) for n in ranked]


def _adds_channel_axis(call: cst.Call) -> str | None:
    """``np.expand_dims(img, axis=k)`` / ``t.unsqueeze(k)``: 'numpy' or 'torch', else None."""
    if call_name(call) == "expand_dims" and positional(call):
        return "numpy"
    if call_name(call) == "unsqueeze" and receiver(call) is not None and (
            positional(call) or keyword(call, "dim")):
        return "torch"
    return None


@operation("repeat_gray_channels")
def repeat_gray_channels(src: Source, line, params, fields) -> list[Candidate]:
    """Where the reader gives a grayscale image its channel axis, repeat it to the channels
    the model takes: ``np.expand_dims(img, axis=2)`` →
    ``np.repeat(np.expand_dims(img, axis=2), 3, axis=2)``; ``t.unsqueeze(0)`` →
    ``t.unsqueeze(0).repeat_interleave(3, dim=0)``. Model code (``forward``) is left alone."""
    channels = int(_field(params, fields, "channels"))
    if channels < 2:
        raise NotApplicable("repeating a channel only helps when the model takes several")
    found = {}
    for call in src.nodes(cst.Call):
        kind = _adds_channel_axis(call)
        where = src.function(call)
        if kind is None or (where is not None and where.name.value == "forward"):
            continue
        if kind == "numpy":
            axis = keyword(call, "axis") or (positional(call)[1] if len(positional(call)) > 1
                                             else None)
            if axis is None:
                continue
            module = receiver(call) or cst.Name("np")
            found[call] = cst.Call(
                func=cst.Attribute(value=module, attr=cst.Name("repeat")),
                args=[cst.Arg(call, comma=_comma()), cst.Arg(cst.Integer(str(channels)),
                                                             comma=_comma()),
                      _keyword_arg("axis", axis.value)])
        else:
            dim = keyword(call, "dim") or positional(call)[0]
            found[call] = _method(call, "repeat_interleave",
                                  cst.Arg(cst.Integer(str(channels)), comma=_comma()),
                                  _keyword_arg("dim", dim.value))
    ranked = _ranked(src, _need(list(found), "no channel axis added to an image outside the "
                                "model in this file"), line)
    return [Candidate([(c, found[c])], f"give grayscale images {channels} channels: "
                      f"`{code(found[c])}`", src.line(c)) for c in ranked]


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


@operation("lambda_to_function")
def lambda_to_function(src: Source, line, params, fields) -> list[Candidate]:
    """A lambda handed to a dataset, a DataLoader or a worker → a module-level function of the
    same parameters and body, which pickle can send to spawn-started workers by name.

    A lambda that reads a variable of the function around it is left alone: moved to module
    level it would no longer see it.
    """
    taken = {n.value for n in _names(src.module)}
    found = []
    for node in src.nodes(cst.Lambda):
        parent = src.parents.get(node)
        if not isinstance(parent, (cst.Arg, cst.Assign, cst.AssignTarget)):
            continue
        if _reads_locals(src, node):
            continue
        found.append(node)
    ranked = _ranked(src, _need(found, "no lambda that could move to module level in this "
                                "file"), line)
    candidates = []
    for node in ranked:
        name = _fresh_name(_lambda_name(src, node), taken)
        params_code = code(node.params)
        body = code(node.body)
        definition = f"def {name}({params_code}):\n    return {body}\n"
        candidates.append(Candidate([(node, cst.Name(name)), insertion(src, definition)],
                                    f"replace `{code(node)}` with the module-level function "
                                    f"{name}", src.line(node)))
    return candidates


def _lambda_name(src: Source, node: cst.Lambda) -> str:
    """The keyword the lambda is passed as (``transform``, ``collate_fn``), else a plain name."""
    parent = src.parents.get(node)
    if isinstance(parent, cst.Arg) and parent.keyword is not None:
        return parent.keyword.value
    return "item_function"


def _fresh_name(base: str, taken: set[str]) -> str:
    """The keyword itself when no variable has that name, else ``KEYWORD_function``."""
    name, number = base, 2
    if name in taken:
        base = name = f"{base}_function"
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    taken.add(name)
    return name


def _reads_locals(src: Source, node: cst.Lambda) -> bool:
    """Whether the lambda's body names something bound inside the function around it."""
    own = {p.name.value for p in node.params.params + node.params.kwonly_params
           + node.params.posonly_params}
    for star in (node.params.star_arg, node.params.star_kwarg):
        if isinstance(star, cst.Param):
            own.add(star.name.value)
    own |= {n.value for comp in _nodes(node.body, cst.CompFor) for n in _names(comp.target)}
    read = {n.value for n in _names(node.body)} - own
    function = src.function(node)
    if function is None or not read:
        return False
    bound = {p.name.value for p in function.params.params + function.params.kwonly_params
             + function.params.posonly_params}
    for assign in src.nodes(cst.AssignTarget, lambda t: src.function(t) is function):
        bound |= {n.value for n in _names(assign.target)}
    for loop in src.nodes(cst.For, lambda f: src.function(f) is function):
        bound |= {n.value for n in _names(loop.target)}
    return bool(read & bound)


def _nodes(node: cst.CSTNode, kind: type) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, visited: cst.CSTNode) -> bool:
            if isinstance(visited, kind):
                found.append(visited)
            return True

    node.visit(Collect())
    return found


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # the attribute's own name is not a variable
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)  # nor is a keyword argument's name
            return False

    node.visit(Collect())
    return found


def _one_hot_target(small: cst.BaseSmallStatement) -> str | None:
    """``ids`` in ``ids[row, k] = 1``: a row of a label tensor marked one-hot."""
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target = small.targets[0].target
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
            and len(target.slice) >= 2 and code(small.value) in ("1", "1.0", "True"):
        return target.value.value
    return None


@operation("class_index_labels")
def class_index_labels(src: Source, line, params, fields) -> list[Candidate]:
    """Labels built one-hot (``ids[row, k] = 1``) where the loss wants one class index per
    sample → the function that builds them returns ``ids.argmax(1)``: the index of each
    row's mark, however the loop that marked the rows was written."""
    found = {}
    for statement in src.nodes(cst.SimpleStatementLine):
        name = next(filter(None, map(_one_hot_target, statement.body)), None)
        function = next((a for a in src.ancestors(statement)
                         if isinstance(a, cst.FunctionDef)), None) if name else None
        if function is None:
            continue
        returns = [r for r in src.nodes(cst.Return, lambda r, name=name: isinstance(r.value, cst.Name)
                                        and r.value.value == name)
                   if function in src.ancestors(r)]
        if returns:
            found[statement] = returns[-1]
    ranked = _ranked(src, _need(list(found), "no one-hot label rows built in a function "
                                              "that returns them"), line)
    return [Candidate([(found[s], found[s].with_changes(value=_method(found[s].value,
                                                                      "argmax", cst.Arg(
                                                                          cst.Integer("1")))))],
                      f"return one class index per sample: `return "
                      f"{code(found[s].value)}.argmax(1)`", src.line(s))
            for s in ranked]
