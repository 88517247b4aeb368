"""A known-good training step, and the numbers the training probes read off a step.

When the user's own step is the suspect, probes compare it with this plain
zero_grad / forward / loss / backward / step loop; losses come back from
user steps in many shapes, and are reduced here to one float.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext


def plain_step(ctx: ProbeContext, optimizer: torch.optim.Optimizer) -> float:
    """One step of the known-good loop; the loss before the step."""
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
    """A loss or norm that exists and is a number: None (unknown) counts as not finite."""
    return x is not None and math.isfinite(x)


def total_grad_norm(model: nn.Module) -> float:
    """The norm of all gradients together, the one number a step's blow-up shows in."""
    grads = [p.grad.detach().float().norm() for p in model.parameters() if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0
