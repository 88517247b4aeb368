"""The ``trace`` probe, and the recorders several probes use while the user's model runs.

``ModuleRecorder`` hooks every module (forward pre/post) and keeps a stack of
the modules being run, so the innermost module still on the stack when an
exception escapes is the one that raised. ``OpRecorder`` is a
``TorchFunctionMode`` that sees every torch function and Tensor method with
the user's file:line. Both keep only descriptions in small ring buffers:
a recorder must not keep activations alive, or it would change the memory
behaviour it is meant to observe.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode, resolve_name

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._describe import describe, shape
from torchdoctor.patient.probes._errors import error_facts, first_line, never_raises
from torchdoctor.patient.probes._frames import (
    exception_location,
    file_name,
    frame_info,
    location,
    user_frame,
)
from torchdoctor.patient.probes._harness import can_run_loss
from torchdoctor.patient.probes._modules import is_leaf, module_label, module_paths
from torchdoctor.patient.probes._tensors import iter_tensors

_METADATA_OPS = frozenset({
    "Tensor.size", "Tensor.dim", "Tensor.stride", "Tensor.numel", "Tensor.is_contiguous",
    "Tensor.data_ptr", "Tensor.is_floating_point", "Tensor.__len__", "Tensor.__format__",
    "Tensor.__repr__", "Tensor.storage_offset", "Tensor.element_size", "Tensor.__hash__",
    "Tensor.__bool__", "Tensor.is_complex", "Tensor.get_device", "Tensor.__reduce_ex__",
})
_name_cache: dict[Any, str | None] = {}


def op_name(func: Any) -> str | None:
    """``F.linear``, ``Tensor.view``, ``torch.log``: how the user would have written the op."""
    try:
        return _name_cache[func]
    except (KeyError, TypeError):
        pass
    name = resolve_name(func) or getattr(func, "__qualname__", None)
    if name is not None:
        if name.endswith((".__get__", ".__set__")):
            name = None
        elif name.startswith("torch.nn.functional."):
            name = "F." + name[len("torch.nn.functional."):]
        elif name.startswith("torch.Tensor."):
            name = "Tensor." + name[len("torch.Tensor."):]
        if name in _METADATA_OPS:
            name = None
    try:
        _name_cache[func] = name
    except TypeError:
        pass
    return name


def is_inplace(name: str, kwargs: dict | None) -> bool:
    bare = name.rsplit(".", 1)[-1]
    if kwargs and kwargs.get("out") is not None:
        return True
    if bare in ("__setitem__", "copy_") or (bare.startswith("__i") and bare.endswith("__")):
        return True
    return bare.endswith("_") and not bare.endswith("__")


def shapes(obj: Any) -> list[list[int]]:
    return [shape(t) for t in iter_tensors(obj)]


class OpRecorder(TorchFunctionMode):
    """Records torch ops with the user's line; remembers the first op that raised.

    ``on_op(name, args, kwargs, out, where)`` lets a probe look at each op as it
    happens (for statistics); it must not keep the tensors.
    """

    def __init__(self, ring: int = 64,
                 on_op: Callable[[str, tuple, dict, Any, dict | None], None] | None = None):
        super().__init__()
        self.ops: deque[dict[str, Any]] = deque(maxlen=ring)
        self.failure: dict[str, Any] | None = None
        self.count = 0
        self.on_op = on_op

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        if name is None:
            return func(*args, **kwargs)
        where = user_frame(2)
        try:
            out = func(*args, **kwargs)
        except Exception:
            if self.failure is None:
                self.failure = {
                    "op": name,
                    "where": where,
                    "inputs": [_brief(t) for t in iter_tensors((args, kwargs))][:8],
                }
            raise
        self.count += 1
        self.ops.append({
            "op": name,
            "file": where["file"] if where else None,
            "line": where["line"] if where else None,
            "function": where["function"] if where else None,
            "in": shapes(args)[:6],
            "out": shapes(out)[:4],
        })
        if self.on_op is not None:
            self.on_op(name, args, kwargs, out, where)
        return out


def _brief(t: torch.Tensor) -> dict[str, Any]:
    return {"shape": shape(t), "dtype": str(t.dtype), "device": str(t.device),
            "contiguous": t.is_contiguous()}


def with_code(entry: dict[str, Any]) -> dict[str, Any]:
    """An op record with its source line filled in (looked up only when reported)."""
    if entry.get("file") and entry.get("line"):
        info = frame_info(entry["file"], entry["line"], entry.get("function") or "")
        return {**entry, "code": info["code"]}
    return entry


class ModuleRecorder:
    """Forward hooks on every module: the stack of modules running, and what flowed through.

    ``on_output(path, module, inputs, output)`` is called after each module;
    raising from it stops the forward (used to stop at the first NaN).
    """

    def __init__(self, model: nn.Module, ring: int = 64,
                 on_output: Callable[[str, nn.Module, tuple, Any], None] | None = None):
        self.model = model
        self.paths = module_paths(model)
        self.stack: list[str] = []
        self.finished: deque[dict[str, Any]] = deque(maxlen=ring)
        self.order: list[str] = []  # every module path in the order it finished
        self.entered_inputs: dict[str, list[dict[str, Any]]] = {}
        self.on_output = on_output
        self._handles: list[Any] = []

    def __enter__(self):
        for module in self.model.modules():
            self._handles.append(module.register_forward_pre_hook(self._pre))
            self._handles.append(module.register_forward_hook(self._post))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def path(self, module: nn.Module) -> str:
        return self.paths.get(id(module), type(module).__name__)

    def _pre(self, module: nn.Module, args: tuple) -> None:
        path = self.path(module)
        self.stack.append(path)
        self.entered_inputs[path] = [_brief(t) for t in iter_tensors(args)][:6]

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        path = self.path(module)
        if self.stack and self.stack[-1] == path:
            self.stack.pop()
        self.order.append(path)
        self.finished.append({
            "module": path,
            "type": type(module).__name__,
            "leaf": is_leaf(module),
            "in": shapes(args)[:6],
            "out": shapes(output)[:4],
        })
        if self.on_output is not None:
            self.on_output(path, module, args, output)


_FLATTEN_OPS = ("Tensor.view", "Tensor.reshape", "Tensor.flatten", "torch.flatten",
                "torch.reshape", "F.flatten")


@probe("trace")
@never_raises
def trace(ctx: ProbeContext, backward: bool = True) -> dict:
    """Run the step under both recorders and say which module/op raised, with what."""
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    facts["raised"] = False
    if ctx.model is None:
        return result("inconclusive", "no model was found to trace", facts)
    run_backward = bool(backward) and can_run_loss(ctx)
    modules = ModuleRecorder(ctx.model)
    ops = OpRecorder()
    phase = "forward"
    error: BaseException | None = None
    output = None
    with preserved(ctx.model, parameters=False):
        try:
            with modules, ops:
                output = ctx.forward()
                if run_backward:
                    phase = "loss"
                    loss = ctx.loss(output)
                    phase = "backward"
                    loss.backward()
        except Exception as exc:  # noqa: BLE001 - the user's error is what we report
            error = exc
    facts.update(phase=phase, ran_backward=run_backward, ops_recorded=ops.count,
                 modules_run=len(modules.order),
                 recent_modules=list(modules.finished)[-8:],
                 recent_ops=[with_code(op) for op in list(ops.ops)[-8:]])
    if error is None:
        facts["output"] = describe(output)
        del output
        what = "forward, loss and backward" if run_backward else "forward"
        summary = f"the {what} ran clean ({len(modules.order)} module calls, {ops.count} ops)"
        if ctx.error:
            summary += f"; the captured {ctx.error.get('type')} did not recur here"
        return result("pass", summary, facts)
    del output
    return _located_failure(ctx, error, phase, modules, ops, facts)


PROBE_FACTS = ("raised", "error_type", "error_message", "failing_module", "failing_op",
               "failing_file", "failing_line", "input_shapes", "input_dtypes", "input_devices",
               "feeding_module", "feeding_shape", "feature_count", "chw")


def _located_failure(ctx: ProbeContext, error: BaseException, phase: str,
                     modules: ModuleRecorder, ops: OpRecorder, facts: dict[str, Any]) -> dict:
    facts.update(error_facts(error))
    facts["raised"] = True
    failing_path = modules.stack[-1] if modules.stack else None
    failure = ops.failure or {}
    where = failure.get("where") or exception_location(error)
    inputs = failure.get("inputs") or (modules.entered_inputs.get(failing_path) or [])
    named = dict(ctx.model.named_modules())
    failing_module = named.get(failing_path) if failing_path is not None else None
    facts.update(
        failing_module=failing_path if failing_path else (
            type(ctx.model).__name__ if failing_path == "" else None),
        failing_module_label=module_label(failing_module) if failing_module is not None else None,
        module_stack=list(modules.stack),
        failing_op=failure.get("op"),
        failing_file=where.get("file") if where else None,
        failing_line=where.get("line") if where else None,
        failing_code=where.get("code") if where else None,
        failing_function=where.get("function") if where else None,
        input_shapes=[t["shape"] for t in inputs],
        input_dtypes=[t["dtype"] for t in inputs],
        input_devices=[t["device"] for t in inputs],
        input_contiguous=[t.get("contiguous") for t in inputs],
    )
    if isinstance(failing_module, nn.Linear) and facts["input_shapes"]:
        _explain_linear(failing_module, failing_path, facts, modules, ops)
    elif isinstance(failing_module, nn.modules.conv._ConvNd) and facts["input_shapes"]:
        got = facts["input_shapes"][0]
        if len(got) >= 2:
            facts.update(expected_channels=failing_module.in_channels,
                         channels=got[1] if len(got) == failing_module.weight.dim() else got[0])
    summary = _summary(facts, phase)
    loc = location(facts["failing_module"], facts["failing_op"], where)
    return result("fail", summary, facts, loc)


def _explain_linear(module: nn.Linear, path: str, facts: dict[str, Any],
                    modules: ModuleRecorder, ops: OpRecorder) -> None:
    """Which earlier module emitted the features that this Linear could not take."""
    got = facts["input_shapes"][0]
    features = got[-1] if got else None
    facts["feature_count"] = features
    facts["expected_features"] = module.in_features
    if features is None or features == module.in_features:
        return
    feeding = None
    for entry in reversed(modules.finished):
        if entry["module"] == path or not entry["leaf"] or not entry["out"]:
            continue
        out = entry["out"][0]
        matches = len(out) >= 3 and _prod(out[1:]) == features
        if feeding is not None and (not matches or out != feeding["out"][0]):
            break
        if not matches:
            continue
        feeding = entry
        if entry["in"] and entry["in"][0] != out:
            break  # the module that made this shape, not the ReLU/Dropout that kept it
    if feeding is not None:
        out = feeding["out"][0]
        facts.update(feeding_module=feeding["module"], feeding_shape=out,
                     feeding_type=feeding["type"], chw=" × ".join(str(d) for d in out[1:]))
    for op in reversed(ops.ops):
        if op["op"] in _FLATTEN_OPS and op["out"] and op["out"][0] == got:
            facts["flatten_op"] = with_code(op)
            break


def _prod(dims: list[int]) -> int:
    total = 1
    for d in dims:
        total *= d
    return total


def _summary(facts: dict[str, Any], phase: str) -> str:
    what = facts["failing_op"] or facts["error_type"]
    where = ""
    if facts["failing_file"]:
        where = f" at {file_name(facts['failing_file'])}:{facts['failing_line']}"
        if facts.get("failing_function"):
            where += f" in {facts['failing_function']}"
    inside = f" in {facts['failing_module']}" if facts["failing_module"] else ""
    if facts.get("failing_module_label"):
        inside += f" ({facts['failing_module_label']})"
    summary = f"{what}{inside} raised {facts['error_type']} during {phase}{where}"
    if facts["input_shapes"]:
        summary += f"; it received {facts['input_shapes'][0]}"
    if facts.get("feeding_module"):
        summary += (f"; {facts['feature_count']} features = {facts['chw']} from "
                    f"{facts['feeding_module']} ({facts['feeding_shape']}), built for "
                    f"{facts['expected_features']}")
    elif not facts["input_shapes"]:
        summary += f": {first_line(facts['error_message'], 120)}"
    return summary
