"""Running the user's model and optimizer without leaving a mark on them.

Probes step optimizers, move BatchNorm statistics and fill ``.grad``; the
user's objects must leave every probe as they came in. Training probes work
on a ``replica`` (model and optimizer deep-copied together, so the optimizer
keeps pointing at the copied parameters and keeps its state); probes that
only run forward and backward use ``preserved``, which costs no copy of the
weights.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext


def replica(ctx: ProbeContext) -> ProbeContext:
    """A context whose model and optimizer are independent copies of the user's."""
    model, optimizer = ctx.model, ctx.optimizer
    try:
        model_copy, optimizer_copy = copy.deepcopy((model, optimizer))
    except Exception:  # noqa: BLE001 - an optimizer holding something uncopyable
        model_copy = copy.deepcopy(model)
        optimizer_copy = _rebuilt_optimizer(optimizer, model, model_copy)
    return replace(ctx, model=model_copy, optimizer=optimizer_copy)


def _rebuilt_optimizer(optimizer: torch.optim.Optimizer | None, model: nn.Module,
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
    """The user's optimizer class and lr over all trainable params; Adam 1e-3 when none.

    A user's optimizer may miss parameters (the bug some probes look for), so
    probes that need every parameter trained build this one instead.
    """
    params = [p for p in ctx.model.parameters() if p.requires_grad]
    if ctx.optimizer is not None:
        group = ctx.optimizer.param_groups[0]
        hyper = {k: v for k, v in group.items() if k not in ("params", "initial_lr")}
        if lr is not None:
            hyper["lr"] = lr
        with contextlib.suppress(Exception):
            return type(ctx.optimizer)(params, **hyper)
    return torch.optim.Adam(params, lr=lr if lr is not None else 1e-3)


@contextlib.contextmanager
def preserved(model: nn.Module | None, optimizer: Any = None,
              parameters: bool = True) -> Iterator[None]:
    """Put the model (and optimizer) back as they were after a probe runs them.

    With ``parameters=False`` only buffers, grads and modes are restored, which
    is enough for forward/backward probes and costs no copy of the weights.
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
