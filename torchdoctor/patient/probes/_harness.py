"""Questions about what the harness gave, asked by several probes alike."""

from __future__ import annotations

from torch import nn

from torchdoctor.patient.context import ProbeContext


def can_run_loss(ctx: ProbeContext) -> bool:
    """A script run under watch may yield a model and batch but no loss or no targets."""
    return ctx.loss_fn is not None and ctx.targets is not None


def classes_out(ctx: ProbeContext) -> int | None:
    """The number of classes the model emits: num_classes, else its last Linear's width."""
    if ctx.num_classes is not None:
        return int(ctx.num_classes)
    if ctx.model is None:
        return None
    last = None
    for module in ctx.model.modules():
        if isinstance(module, nn.Linear):
            last = module
    return int(last.out_features) if last is not None else None
