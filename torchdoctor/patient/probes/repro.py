"""The ``repro`` probe: sources of a standalone script that should fail like the user's run.

Only the patient holds the live objects of the failure (the failing module, the
tensors that reached it, the model, its weights), so the sources are written
here; the doctor writes them to disk, runs each in a fresh process and keeps
the smallest one that was seen to fail the same way. Levels, smallest first:

* ``module``: a standard ``torch.nn`` module rebuilt from its configuration,
  called with the arguments found in its own ``forward`` frame of the traceback;
* ``op``: the torch op that raised (or first produced a NaN/Inf from finite
  inputs), called with the same arguments, from a rerun under a function mode;
* ``model``: the whole model from its classes' source, with its weights and the
  recorded batch, the loss and backward.

Tensors whose values matter (integers: indices and labels; floats that hold
NaN/Inf or feed a NaN) are written literally when small, or saved beside the
script (``repro_inputs.pt``, at most 1 MB); the rest are seeded random ones of
the same shape, dtype, device, strides and ``requires_grad``.
"""

from __future__ import annotations

import ast
import base64
import inspect
import io
import math
import os
import textwrap
import types
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._harness import can_run_loss
from torchdoctor.patient.probes._modules import is_leaf
from torchdoctor.patient.probes._tensors import all_finite_in, map_tensors
from torchdoctor.patient.probes.trace import op_name

INPUTS_FILE = "repro_inputs.pt"
MAX_FILE_BYTES = 1 << 20
LITERAL_INTS = 4096
LITERAL_FLOATS = 64
_BACKWARD_OPS = ("Tensor.backward", "torch.autograd.backward", "torch.autograd.grad")
_SKIPPED_INIT_PARAMS = {"self", "device", "dtype", "size_average", "reduce", "_weight",
                        "_freeze"}


class Unreproducible(Exception):
    """This level cannot be written for this failure; the message says why."""


@probe("repro")
@never_raises
def repro(ctx: ProbeContext) -> dict:
    """Sources for every level that can be written for the captured failure."""
    exc = ctx.extras.get("exception")
    error = ctx.error or {}
    levels: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    rerun = _Rerun(ctx)
    for name, build in (("module", _module_level), ("op", _op_level), ("model", _model_level)):
        try:
            levels.append({"level": name, **build(ctx, exc, rerun)})
        except Unreproducible as why:
            skipped[name] = str(why)
    facts = {"levels": levels, "skipped": skipped, "error_type": error.get("type"),
             "error_message": error.get("message")}
    if not levels:
        return result("inconclusive", "no repro below the script level could be written: "
                      + "; ".join(f"{k}: {v}" for k, v in skipped.items()), facts)
    names = ", ".join(level["level"] for level in levels)
    return result("pass", f"repro sources written for: {names}", facts)


# ---------------------------------------------------------------- module level


def _module_level(ctx: ProbeContext, exc: BaseException | None,
                  rerun: _Rerun) -> dict[str, Any]:
    if exc is None:
        raise Unreproducible("no captured exception")
    frame = _innermost_forward_frame(exc)
    if frame is None:
        raise Unreproducible("the error was not raised inside a module's forward")
    module = frame.f_locals["self"]
    constructor, numbers = module_constructor(module)
    params = list(inspect.signature(type(module).forward).parameters)[1:]
    writer = ScriptWriter(values_matter=False)
    args = []
    for name in params:
        if name not in frame.f_locals:
            break
        args.append(writer.value(frame.f_locals[name]))
    body = [f"module = {constructor}"]
    if not module.training:
        body.append("module.eval()")
    body += writer.lines + [f"module({', '.join(args)})"]
    return writer.finish(body, expect=None, config_numbers=sorted(numbers),
                         what=f"{type(module).__name__} from its configuration")


def _innermost_forward_frame(exc: BaseException) -> types.FrameType | None:
    found = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "forward" and isinstance(frame.f_locals.get("self"),
                                                            nn.Module):
            found = frame
        tb = tb.tb_next
    if found is None or not _is_standard(type(found.f_locals["self"])):
        return None
    return found


def _is_standard(cls: type) -> bool:
    return cls.__module__.startswith("torch.nn.")


def module_constructor(module: nn.Module) -> tuple[str, set[int]]:
    """``nn.Linear(in_features=9216, out_features=128, bias=True)`` rebuilt from attributes.

    Checked by building it here: a constructor that does not give back the same
    module (type, ``extra_repr``, parameter shapes) is not offered.
    """
    cls = type(module)
    kwargs: dict[str, str] = {}
    numbers: set[int] = set()
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name in _SKIPPED_INIT_PARAMS or param.kind in (param.VAR_POSITIONAL,
                                                          param.VAR_KEYWORD):
            continue
        if name == "bias" and isinstance(param.default, bool):
            value: Any = getattr(module, "bias", None) is not None
        elif hasattr(module, name):
            value = getattr(module, name)
        else:
            continue
        if not _is_literal(value):
            raise Unreproducible(f"{cls.__name__}.{name} cannot be written as a literal")
        if param.default is not inspect.Parameter.empty and _same(value, param.default):
            continue
        kwargs[name] = repr(value)
        numbers.update(_ints(value))
    text = f"nn.{cls.__name__}({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
    try:
        rebuilt = eval(text, {"nn": nn})
    except Exception as error:  # noqa: BLE001
        raise Unreproducible(f"{text} does not build: {error}") from None
    if type(rebuilt) is not cls or rebuilt.extra_repr() != module.extra_repr() or [
            p.shape for p in rebuilt.parameters()] != [p.shape for p in module.parameters()]:
        raise Unreproducible(f"{text} does not rebuild {cls.__name__}({module.extra_repr()})")
    return text, numbers


def standard_constructor(module: nn.Module) -> str:
    """A standard leaf from its configuration, or an ``nn.Sequential`` of such, recursively."""
    if type(module) is nn.Sequential:
        names = [name for name, _ in module.named_children()]
        if names != [str(i) for i in range(len(names))]:
            raise Unreproducible("a Sequential with named children is not written yet")
        return f"nn.Sequential({', '.join(standard_constructor(m) for m in module)})"
    if not _is_standard(type(module)) or not is_leaf(module):
        raise Unreproducible(f"{type(module).__name__} is not a standard leaf module")
    return module_constructor(module)[0]


def _is_literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(_is_literal(v) for v in value)
    return False


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and value == default
    except Exception:  # noqa: BLE001
        return False


def _ints(value: Any) -> set[int]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, (tuple, list)):
        return set().union(*(_ints(v) for v in value)) if value else set()
    return set()


# ---------------------------------------------------------------- op level


class _FailingOp(TorchFunctionMode):
    """Keeps the arguments of the op that raised, and of the first op that made a NaN/Inf."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: tuple[str, tuple, dict] | None = None
        self.nonfinite: tuple[str, tuple, dict] | None = None

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        if name is None:
            return func(*args, **kwargs)
        try:
            out = func(*args, **kwargs)
        except Exception:
            if self.failed is None:
                self.failed = (name, args, kwargs)
            raise
        if self.nonfinite is None and _makes_nonfinite(out, args, kwargs):
            self.nonfinite = (name, _detached(args), _detached(kwargs))
        return out


def _makes_nonfinite(out: Any, args: tuple, kwargs: dict) -> bool:
    """An op that turned finite inputs into NaN/Inf made it; one that passed it on did not."""
    return not all_finite_in(out) and all_finite_in((args, kwargs))


def _detached(obj: Any) -> Any:
    """The op's arguments as they were then, safe from later in-place changes."""
    return map_tensors(lambda t: t.detach().clone(), obj)


class _Rerun:
    """One rerun of forward (+ loss and backward) on the live objects, under ``_FailingOp``."""

    def __init__(self, ctx: ProbeContext) -> None:
        self.mode = _FailingOp()
        self.error: BaseException | None = None
        self.ran = ctx.model is not None and ctx.batch is not None and ctx.inputs is not None
        if self.ran:
            with preserved(ctx.model, parameters=False):
                try:
                    with self.mode:
                        output = ctx.forward()
                        if can_run_loss(ctx):
                            ctx.loss(output).backward()
                except Exception as raised:  # noqa: BLE001 - the user's error, observed
                    self.error = raised
        original = (ctx.error or {}).get("type")
        self.same_type = self.error is not None and type(self.error).__name__ == original

    def outcome(self) -> str:
        if not self.ran:
            return "could not be rerun"
        if self.error is None:
            return "ran clean when rerun"
        return f"raised {type(self.error).__name__} instead when rerun"


def _op_level(ctx: ProbeContext, exc: BaseException | None, rerun: _Rerun) -> dict[str, Any]:
    if not rerun.ran:
        raise Unreproducible("no model and batch to rerun")
    mode = rerun.mode
    if mode.failed is not None and rerun.same_type:
        name, args, kwargs = mode.failed
        if name in _BACKWARD_OPS:
            raise Unreproducible("the error is raised by backward; the graph is needed")
        return _op_script(name, args, kwargs, nan=False)
    if mode.nonfinite is not None:
        if any(not bool(torch.isfinite(p).all()) for p in ctx.model.parameters()):
            raise Unreproducible("the weights are already non-finite; the NaN comes from"
                                 " training, not from one op")
        name, args, kwargs = mode.nonfinite
        return _op_script(name, args, kwargs, nan=True)
    raise Unreproducible("rerunning the step did not raise at a torch op")


def _op_script(name: str, args: tuple, kwargs: dict, nan: bool) -> dict[str, Any]:
    call = _callable_text(name)
    writer = ScriptWriter(values_matter=nan)
    written = [writer.value(a) for a in args]
    written += [f"{k}={writer.value(v)}" for k, v in kwargs.items() if v is not None]
    body = writer.lines + [f"out = {call}({', '.join(written)})"]
    expect = None
    if nan:
        message = f"non-finite output at {name}"
        body.append(f"assert all(torch.isfinite(t).all() for t in "
                    f"(out if isinstance(out, (tuple, list)) else [out])), {message!r}")
        expect = {"type": "AssertionError", "message": message}
    return writer.finish(body, expect=expect, config_numbers=[],
                         what=f"the op {name}" + (" producing a NaN/Inf" if nan else ""))


def _callable_text(name: str) -> str:
    if name.startswith("Tensor."):
        return "torch." + name
    if name.startswith("F."):
        return "torch.nn.functional." + name[2:]
    if name.startswith("torch."):
        return name
    raise Unreproducible(f"cannot name {name} from the torch namespace")


# ---------------------------------------------------------------- model level


def _model_level(ctx: ProbeContext, exc: BaseException | None,
                 rerun: _Rerun) -> dict[str, Any]:
    model = ctx.model
    if model is None or ctx.batch is None or ctx.inputs is None:
        raise Unreproducible("no model and batch were found")
    if not rerun.same_type:
        # Not worth a fresh process: the model on this batch does not fail that way.
        raise Unreproducible(f"the model on the recorded batch {rerun.outcome()}")
    sources = ClassSources()
    if _is_standard(type(model)):
        constructor = standard_constructor(model)
    else:
        constructor = f"{type(model).__name__}()"
        _check_no_arg_constructor(model)
        for module in model.modules():
            if not _is_standard(type(module)):
                sources.add(type(module))
    if ctx.loss_fn is not None and not isinstance(ctx.loss_fn, nn.Module):
        sources.add_function(ctx.loss_fn)
    writer = ScriptWriter(values_matter=True, exact=False)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    body = [f"model = {constructor}"]
    if _saved_size(state) <= MAX_FILE_BYTES:
        body.append(f"model.load_state_dict({writer.saved('state_dict', state)})")
    body.append("model.train()" if model.training else "model.eval()")
    devices = {str(p.device) for p in model.parameters()}
    if devices - {"cpu"}:
        body.append(f"model.to({min(devices - {'cpu'})!r})")
    inputs = ctx.inputs
    if isinstance(inputs, dict):
        call = ", ".join(f"{k}={writer.value(v)}" for k, v in inputs.items())
    elif isinstance(inputs, (tuple, list)):
        call = ", ".join(writer.value(v) for v in inputs)
    else:
        call = writer.value(inputs)
    body += writer.lines
    writer.lines = []
    body.append(f"out = model({call})")
    if can_run_loss(ctx):
        loss_fn = ctx.loss_fn
        if isinstance(loss_fn, nn.Module):
            loss_text, _ = module_constructor(loss_fn)
        else:
            loss_text = loss_fn.__name__
        target = writer.value(ctx.targets)
        body += writer.lines + [f"loss = {loss_text}(out, {target})", "loss.backward()"]
    return writer.finish(body, expect=None, config_numbers=[], what="the whole model with"
                         " the recorded batch", preamble=sources.text())


def _check_no_arg_constructor(model: nn.Module) -> None:
    try:
        rebuilt = type(model)()
    except Exception as error:  # noqa: BLE001 - the user's constructor
        raise Unreproducible(f"{type(model).__name__}() does not build without arguments:"
                             f" {type(error).__name__}: {error}") from None
    shapes = {k: tuple(v.shape) for k, v in rebuilt.state_dict().items()}
    if shapes != {k: tuple(v.shape) for k, v in model.state_dict().items()}:
        raise Unreproducible(f"{type(model).__name__}() builds a different model than the"
                             " one that failed")


def _saved_size(obj: Any) -> int:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.tell()


class ClassSources:
    """The source of the user's classes and functions, with their file's imports and globals.

    Found through the code objects of their methods and the file's syntax tree,
    not ``inspect.getsource``: a script run as ``__main__`` is no longer the
    module ``__main__`` names once it has finished.
    """

    def __init__(self) -> None:
        self._items: dict[tuple[str, int], str] = {}
        self._preamble: dict[str, list[str]] = {}
        self._names: set[str] = set()

    def add(self, cls: type) -> None:
        for base in reversed(cls.__mro__):
            if base is cls or (issubclass(base, nn.Module) and not _is_standard(base)
                               and base is not nn.Module):
                self._add_definition(base, base.__name__, _file_of_class(base))

    def add_function(self, fn: Any) -> None:
        code = getattr(fn, "__code__", None)
        if code is None:
            raise Unreproducible(f"the loss {fn!r} has no source")
        self._add_definition(fn, fn.__name__, code.co_filename)

    def _add_definition(self, obj: Any, name: str, path: str | None) -> None:
        if path is None or not os.path.isfile(path):
            raise Unreproducible(f"the source of {name} is not available")
        tree, lines = _parsed(path)
        node = next((n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                     and n.name == name), None)
        if node is None:
            raise Unreproducible(f"{name} is not defined at the top level of {path}")
        self._items[(path, _start(node))] = "".join(lines[_start(node) - 1:node.end_lineno])
        self._names.add(name)
        self._add_globals(path, tree, lines, node)

    def _add_globals(self, path: str, tree: ast.Module, lines: list[str],
                     node: ast.AST) -> None:
        if path not in self._preamble:
            self._preamble[path] = [
                "".join(lines[n.lineno - 1:n.end_lineno]) for n in tree.body
                if isinstance(n, (ast.Import, ast.ImportFrom))]
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for top in tree.body:
            if isinstance(top, (ast.Assign, ast.AnnAssign)):
                targets = top.targets if isinstance(top, ast.Assign) else [top.target]
                defined = {t.id for t in targets if isinstance(t, ast.Name)}
                if defined & used:
                    self._preamble[path].append("".join(lines[top.lineno - 1:top.end_lineno]))
            elif isinstance(top, (ast.FunctionDef, ast.ClassDef)) and top.name in used and (
                    top.name not in self._names) and top is not node:
                self._names.add(top.name)
                self._items[(path, _start(top))] = "".join(lines[_start(top) - 1:top.end_lineno])
                self._add_globals(path, tree, lines, top)

    def text(self) -> str:
        preamble: list[str] = []
        for block in self._preamble.values():
            preamble += [line for line in block if line not in preamble]
        items = [self._items[key] for key in sorted(self._items)]
        return "".join(preamble) + ("\n\n" if preamble else "") + "\n\n".join(items)


def _start(node: ast.FunctionDef | ast.ClassDef) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


_parsed_cache: dict[str, tuple[ast.Module, list[str]]] = {}


def _parsed(path: str) -> tuple[ast.Module, list[str]]:
    if path not in _parsed_cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        _parsed_cache[path] = (ast.parse(text), text.splitlines(keepends=True))
    return _parsed_cache[path]


def _file_of_class(cls: type) -> str | None:
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is not None:
            return code.co_filename
    return None


# ---------------------------------------------------------------- writing values


class ScriptWriter:
    """Turns live values into lines of a script, and the script into the probe's answer."""

    def __init__(self, values_matter: bool, exact: bool = True) -> None:
        self.values_matter = values_matter
        self.exact = exact  # False: a tensor too large to save is replaced by a random one
        self.lines: list[str] = []
        self.saved_tensors: dict[str, Any] = {}
        self._count = 0

    def value(self, obj: Any) -> str:
        if isinstance(obj, torch.Tensor):
            name = f"x{self._count}"
            self._count += 1
            self.lines.append(f"{name} = {self._tensor(obj, name)}")
            return name
        if isinstance(obj, (torch.dtype,)):
            return str(obj)
        if isinstance(obj, torch.Size):
            return repr(tuple(obj))
        if isinstance(obj, (tuple, list)):
            items = [self.value(v) for v in obj]
            if isinstance(obj, tuple):
                return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
            return f"[{', '.join(items)}]"
        if obj is None or isinstance(obj, (bool, int, str)):
            return repr(obj)
        if isinstance(obj, float):
            return _float_text(obj)
        raise Unreproducible(f"a {type(obj).__name__} argument cannot be written in a script")

    def saved(self, key: str, obj: Any) -> str:
        self.saved_tensors[key] = obj
        return f"INPUTS[{key!r}]"

    def _tensor(self, t: torch.Tensor, name: str) -> str:
        if t.layout != torch.strided or t.is_quantized or t.is_complex():
            raise Unreproducible(f"a {t.layout} {t.dtype} tensor is not written yet")
        with torch.no_grad():
            cpu = t.detach().cpu()
            integer = not cpu.is_floating_point()
            nonfinite = not integer and not bool(torch.isfinite(cpu).all())
            if integer and cpu.numel() <= LITERAL_INTS or (
                    (self.values_matter or nonfinite) and cpu.numel() <= LITERAL_FLOATS):
                text = _literal(cpu)
            elif (integer or self.values_matter or nonfinite) and (
                    self.exact or _saved_size(cpu) <= MAX_FILE_BYTES // 2):
                if _saved_size(cpu) > MAX_FILE_BYTES:
                    raise Unreproducible(f"a {list(cpu.shape)} tensor whose values matter is"
                                         " over 1 MB")
                text = self.saved(name, cpu.contiguous())
            else:
                text = f"torch.randn({list(cpu.shape)}, dtype={cpu.dtype})"
        if not t.is_contiguous() and t.dim() > 1:
            text = (f"torch.empty_strided({list(t.shape)}, {list(t.stride())}, "
                    f"dtype={t.dtype}).copy_({text})")
        if t.device.type != "cpu":
            text += f".to({str(t.device)!r})"
        if t.requires_grad and t.is_leaf and t.is_floating_point():
            text += ".requires_grad_()"
        return text

    def finish(self, body: list[str], expect: dict | None, config_numbers: list[int],
               what: str, preamble: str = "") -> dict[str, Any]:
        head = ["import torch", "from torch import nn", ""]
        if self.saved_tensors:
            head = ["from pathlib import Path", "", *head,
                    f"INPUTS = torch.load(Path(__file__).with_name({INPUTS_FILE!r}))"]
        source = "\n".join(head) + "\n"
        if preamble:
            kept = [line for line in preamble.splitlines() if not line or line not in head]
            source += "\n" + "\n".join(kept).strip("\n") + "\n\n"
        source += "\ntorch.manual_seed(0)\n" + "\n".join(body) + "\n"
        files = {}
        if self.saved_tensors:
            buffer = io.BytesIO()
            torch.save(self.saved_tensors, buffer)
            if buffer.tell() > MAX_FILE_BYTES:
                raise Unreproducible("the values this repro needs are over 1 MB")
            files[INPUTS_FILE] = base64.b64encode(buffer.getvalue()).decode("ascii")
        return {"source": source, "files": files, "expect": expect,
                "config_numbers": config_numbers, "what": what}


def _literal(t: torch.Tensor) -> str:
    flat = ", ".join(_number_text(v) for v in t.reshape(-1).tolist())
    if len(flat) > 80:
        flat = "\n" + textwrap.indent(textwrap.fill(flat, 92), "    ") + "\n"
    body = f"torch.tensor([{flat}], dtype={t.dtype})"
    return body if t.dim() == 1 else f"{body}.reshape({list(t.shape)})"


def _number_text(value: Any) -> str:
    return _float_text(value) if isinstance(value, float) else repr(value)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "-float('inf')"
    return repr(value)
