"""Helpers every probe needs: describing tensors as JSON, naming modules, finding user code.

Probe results cross a process boundary as JSON and may describe models with
gigabytes of activations, so tensors are only ever described (shape, dtype,
device, a few statistics), never sent. Locations are reported in the user's
own files, so frames inside torch, torchdoctor and the standard library are
skipped when deciding where an operation "happened".
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import math
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

import torch
from torch import nn

import torchdoctor
from torchdoctor.patient.probes import result

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_DOCTOR_DIR = os.path.dirname(os.path.abspath(torchdoctor.__file__)) + os.sep
_STDLIB_DIRS = tuple(
    os.path.abspath(p) + os.sep
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_file_kind_cache: dict[str, int] = {}

# How far from "the user's code" a file is: user code, a third-party library, torch or
# the standard library (never reported as a location), torchdoctor itself (the caller of
# everything a probe runs, so walking outwards stops there).
USER, LIBRARY, INTERNAL, DOCTOR = 0, 1, 2, 3


def file_kind(filename: str) -> int:
    kind = _file_kind_cache.get(filename)
    if kind is None:
        path = os.path.abspath(filename)
        if path.startswith(_DOCTOR_DIR):
            kind = DOCTOR
        elif filename.startswith("<frozen") or path.startswith(_TORCH_DIR):
            kind = INTERNAL
        elif any(marker in path for marker in _LIBRARY_MARKERS):
            kind = LIBRARY
        elif path.startswith(_STDLIB_DIRS) or filename.startswith("<"):
            kind = INTERNAL
        else:
            kind = USER
        _file_kind_cache[filename] = kind
    return kind


def frame_info(filename: str, line: int, function: str) -> dict[str, Any]:
    return {
        "file": filename,
        "line": line,
        "function": function,
        "code": linecache.getline(filename, line).strip() or None,
    }


def user_frame(start: FrameType | None = None) -> dict[str, Any] | None:
    """The innermost caller in the user's code (or, failing that, in a library).

    The walk stops at the probe that called the user's code: frames beyond it
    (pytest, the patient's worker loop) are not where the user's op happened.
    """
    frame = start if start is not None else sys._getframe(1)
    fallback = None
    left_doctor = False
    while frame is not None:
        kind = file_kind(frame.f_code.co_filename)
        if kind == DOCTOR:
            if left_doctor:
                break
        else:
            left_doctor = True
        if kind == USER:
            return frame_info(frame.f_code.co_filename, frame.f_lineno, _qualname(frame))
        if kind == LIBRARY and fallback is None:
            fallback = frame_info(frame.f_code.co_filename, frame.f_lineno, _qualname(frame))
        frame = frame.f_back
    return fallback


def user_frame_of_traceback(tb: TracebackType | None) -> dict[str, Any] | None:
    """The deepest user frame of a traceback: the user's line that led to the error.

    Frames outside the probe that ran the user's code (pytest, the worker loop)
    do not count; torchdoctor frames deeper down (a recorder's hook) are skipped.
    """
    best = None
    fallback = None
    state = "outside"  # → "probe" at the first torchdoctor frame → "user" after it
    while tb is not None:
        frame = tb.tb_frame
        kind = file_kind(frame.f_code.co_filename)
        if kind == DOCTOR:
            if state != "user":
                best = fallback = None
                state = "probe"
        else:
            if state == "probe":
                state = "user"
            info = (frame.f_code.co_filename, tb.tb_lineno, _qualname(frame))
            if kind == USER:
                best = info
            elif kind == LIBRARY:
                fallback = info
        tb = tb.tb_next
    chosen = best or fallback
    return frame_info(*chosen) if chosen else None


def _qualname(frame: FrameType) -> str:
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)


def error_facts(exc: BaseException) -> dict[str, Any]:
    return {
        "error_type": type(exc).__name__,
        "error_message": first_line(str(exc), limit=2000),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


def first_line(text: str, limit: int = 300) -> str:
    """Torch messages can run to pages (C++ frames); the first paragraph says what happened."""
    head = text.strip().split("\n\n")[0]
    return head if len(head) <= limit else head[: limit - 1] + "…"


def never_raises(fn: Callable[..., dict]) -> Callable[..., dict]:
    """A probe that breaks reports status "error" with its traceback instead of raising."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> dict:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the probe's own failure, reported
            facts = error_facts(exc)
            return result("error", f"the probe itself failed: {facts['error_type']}: "
                          f"{first_line(facts['error_message'], 160)}", facts)

    return guarded


def shape(t: torch.Tensor) -> list[int]:
    return [int(s) for s in t.shape]


def tensor_stats(t: torch.Tensor) -> dict[str, Any]:
    """min/max/mean and non-finite counts, reduced on the tensor's own device."""
    with torch.no_grad():
        if t.numel() == 0 or t.is_complex() or t.layout != torch.strided:
            return {}
        if t.dtype == torch.bool:
            return {"true": int(t.sum())}
        if not t.is_floating_point():
            return {"min": int(t.min()), "max": int(t.max())}
        finite = torch.isfinite(t)
        nan = int(torch.isnan(t).sum())
        inf = int(t.numel() - int(finite.sum()) - nan)
        stats: dict[str, Any] = {"nan": nan, "inf": inf}
        if nan + inf < t.numel():
            values = t[finite] if nan + inf else t
            values = values.float()
            stats.update(min=_num(values.min()), max=_num(values.max()),
                         mean=_num(values.mean()))
        return stats


def all_finite(t: torch.Tensor) -> bool:
    if not t.is_floating_point() and not t.is_complex():
        return True
    with torch.no_grad():
        return bool(torch.isfinite(t).all())


def _num(value: torch.Tensor) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def describe_tensor(t: torch.Tensor, stats: bool = False) -> dict[str, Any]:
    described: dict[str, Any] = {
        "shape": shape(t),
        "dtype": str(t.dtype),
        "device": str(t.device),
        "requires_grad": bool(t.requires_grad),
    }
    if stats:
        described["stats"] = tensor_stats(t)
    return described


def describe(obj: Any, stats: bool = False, depth: int = 0) -> Any:
    """A JSON description of tensors nested in tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return describe_tensor(obj, stats)
    if depth > 4:
        return json_safe(obj)
    if isinstance(obj, dict):
        return {str(k): describe(v, stats, depth + 1) for k, v in list(obj.items())[:32]}
    if isinstance(obj, (tuple, list)):
        return [describe(v, stats, depth + 1) for v in obj[:32]]
    return json_safe(obj)


def iter_tensors(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth <= 4 and isinstance(obj, dict):
        for value in obj.values():
            yield from iter_tensors(value, depth + 1)
    elif depth <= 4 and isinstance(obj, (tuple, list)):
        for value in obj:
            yield from iter_tensors(value, depth + 1)


def first_tensor(obj: Any) -> torch.Tensor | None:
    return next(iter_tensors(obj), None)


def json_safe(obj: Any, depth: int = 0) -> Any:
    """Anything a probe might put in its facts, made JSON-serialisable."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, torch.Tensor):
        if obj.numel() == 1 and obj.layout == torch.strided:
            return json_safe(obj.item())
        return describe_tensor(obj)
    if isinstance(obj, (torch.dtype, torch.device)):
        return str(obj)
    if isinstance(obj, torch.Size):
        return [int(s) for s in obj]
    if depth > 6:
        return repr(obj)[:200]
    if isinstance(obj, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (tuple, list, set, frozenset)):
        return [json_safe(v, depth + 1) for v in obj]
    return repr(obj)[:200]


def module_paths(model: nn.Module) -> dict[int, str]:
    """id(module) → dotted path; the root is "" (shown as the class name by ``module_label``)."""
    return {id(m): name for name, m in model.named_modules()}


def is_leaf(module: nn.Module) -> bool:
    return next(module.children(), None) is None


def module_label(module: nn.Module) -> str:
    """``Linear(in_features=9216, out_features=128, bias=True)``: what the module was built as."""
    extra = module.extra_repr()
    return f"{type(module).__name__}({extra})" if "\n" not in extra else type(module).__name__


def location(module: str | None = None, op: str | None = None,
             site: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Where a probe points: the module, the op, and the user's ``site`` (file, line)."""
    if module is None and op is None and site is None:
        return None
    return {
        "module": module,
        "op": op,
        "file": site.get("file") if site else None,
        "line": site.get("line") if site else None,
    }


@contextlib.contextmanager
def preserved(model: nn.Module | None, optimizer: Any = None,
              parameters: bool = True) -> Iterator[None]:
    """Put the model (and optimizer) back as they were after a probe runs them.

    A forward in train mode moves BatchNorm statistics and a backward fills
    ``.grad``; probes must leave the user's objects as they found them. With
    ``parameters=False`` only buffers, grads and modes are restored, which is
    enough for forward/backward probes and costs no copy of the weights.
    """
    if model is None:
        yield
        return
    modes = {id(m): m.training for m in model.modules()}
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    grads = {id(p): p.grad for p in model.parameters()}
    weights = ({name: p.detach().clone() for name, p in model.named_parameters()}
               if parameters else {})
    optim_state = None
    if optimizer is not None and parameters:
        import copy

        optim_state = copy.deepcopy(optimizer.state_dict())
    try:
        yield
    finally:
        with torch.no_grad():
            for module in model.modules():
                if id(module) in modes:
                    module.training = modes[id(module)]
            for name, b in model.named_buffers():
                if name in buffers and b.shape == buffers[name].shape:
                    b.copy_(buffers[name])
            for name, p in model.named_parameters():
                if name in weights and p.shape == weights[name].shape:
                    p.copy_(weights[name])
            for p in model.parameters():
                p.grad = grads.get(id(p))
        if optim_state is not None:
            optimizer.load_state_dict(optim_state)


def classes_out(ctx: Any) -> int | None:
    """The number of classes the model emits: its last Linear's width, or num_classes."""
    if ctx.num_classes is not None:
        return int(ctx.num_classes)
    if ctx.model is None:
        return None
    last = None
    for module in ctx.model.modules():
        if isinstance(module, nn.Linear):
            last = module
    return int(last.out_features) if last is not None else None


def can_run_loss(ctx: Any) -> bool:
    return ctx.loss_fn is not None and ctx.targets is not None
