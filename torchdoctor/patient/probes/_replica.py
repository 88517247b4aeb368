"""Copies of the user's training setup, so the training probes never alter the original.

Training probes step optimizers and change weights; they run on a replica
(model and optimizer deep-copied together, so the optimizer keeps pointing
at the copied parameters and keeps its state) and leave the user's objects
as they found them. The helpers here also name things in the user's terms:
module paths for parameters and the user's own file:line for a call.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext

_TORCH_DIR = os.path.dirname(torch.__file__)
_DOCTOR_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB_DIR = os.path.dirname(os.__file__)


def replica(ctx: ProbeContext) -> ProbeContext:
    """A context whose model and optimizer are independent copies of the user's."""
    model, optimizer = ctx.model, ctx.optimizer
    try:
        model_copy, optimizer_copy = copy.deepcopy((model, optimizer))
    except Exception:  # noqa: BLE001 - an optimizer holding something uncopyable
        model_copy = copy.deepcopy(model)
        optimizer_copy = rebuild_optimizer(optimizer, model, model_copy)
    return replace(ctx, model=model_copy, optimizer=optimizer_copy)


def rebuild_optimizer(optimizer: torch.optim.Optimizer | None, model: nn.Module,
                      model_copy: nn.Module) -> torch.optim.Optimizer | None:
    """The same optimizer class and hyperparameters, over the copy's parameters."""
    if optimizer is None:
        return None
    mapping = {id(p): q for p, q in zip(model.parameters(), model_copy.parameters())}
    groups = []
    for group in optimizer.param_groups:
        params = [mapping[id(p)] for p in group["params"] if id(p) in mapping]
        if params:
            groups.append({**{k: v for k, v in group.items() if k != "params"},
                           "params": params})
    if not groups:
        return None
    return type(optimizer)(groups, **optimizer.defaults)


def standard_optimizer(ctx: ProbeContext, lr: float | None = None) -> torch.optim.Optimizer:
    """The user's optimizer class and lr over all trainable params; Adam 1e-3 when none."""
    params = [p for p in ctx.model.parameters() if p.requires_grad]
    if ctx.optimizer is not None:
        group = ctx.optimizer.param_groups[0]
        hyper = {k: v for k, v in group.items() if k not in ("params", "initial_lr")}
        if lr is not None:
            hyper["lr"] = lr
        with contextlib.suppress(Exception):
            return type(ctx.optimizer)(params, **hyper)
    return torch.optim.Adam(params, lr=lr if lr is not None else 1e-3)


def plain_step(ctx: ProbeContext, optimizer: torch.optim.Optimizer) -> float:
    """zero_grad, forward, loss, backward, step with a known-good loop; the loss before."""
    optimizer.zero_grad(set_to_none=True)
    loss = ctx.loss(ctx.forward())
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def loss_value(value: Any) -> float | None:
    """A float from whatever a train_step returned (tensor, number, tuple, dict)."""
    if isinstance(value, (tuple, list)) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("loss")
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach())
    if isinstance(value, (int, float)):
        return float(value)
    return None


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def module_of(param_name: str) -> str:
    """'encoder.0.weight' -> 'encoder.0'; a root parameter belongs to ''."""
    return param_name.rpartition(".")[0]


def top_module(names: list[str]) -> str:
    """The shortest common module path of several parameters (e.g. 'encoder')."""
    paths = [module_of(n).split(".") for n in names]
    common: list[str] = []
    for parts in zip(*paths):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common) or module_of(names[0])


def is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    return not (path.startswith((_TORCH_DIR, _DOCTOR_DIR, _STDLIB_DIR))
                or filename.startswith("<"))


def user_frame(skip: int = 1) -> dict | None:
    """The innermost frame of the user's code between an op and the probe that caused it.

    torchdoctor's own frames at the top of the stack (watchers, wrappers) are
    skipped; reaching one further down means the op came from the probe itself.
    """
    frame = sys._getframe(skip)
    while frame is not None and _is_doctor_file(frame.f_code.co_filename):
        frame = frame.f_back
    while frame is not None:
        filename = frame.f_code.co_filename
        if _is_doctor_file(filename):
            return None
        if is_user_file(filename):
            return {"file": filename, "line": frame.f_lineno, "function": frame.f_code.co_name}
        frame = frame.f_back
    return None


def _is_doctor_file(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_DOCTOR_DIR + os.sep)


def exception_location(exc: BaseException) -> dict | None:
    """The user's deepest frame in an exception's traceback."""
    found = None
    for entry in traceback.extract_tb(exc.__traceback__):
        if is_user_file(entry.filename):
            found = {"file": entry.filename, "line": entry.lineno, "function": entry.name}
    return found


def describe_error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "message": str(exc)[:500]}


def named_trainable(model: nn.Module) -> Iterator[tuple[str, nn.Parameter]]:
    return ((n, p) for n, p in model.named_parameters() if p.requires_grad)


def grad_norms(model: nn.Module) -> dict[str, float]:
    return {n: float(p.grad.detach().norm()) for n, p in model.named_parameters()
            if p.grad is not None}
