"""What a probe gets to work on: the parts of the user's training setup.

A harness returns these parts directly; a script run under watch has them
recovered from the live frames of its failure. Probes see one shape either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

TARGET_KEYS = ("targets", "target", "labels", "label", "y")


@dataclass
class ProbeContext:
    model: nn.Module | None
    batch: Any = None  # as the harness gave it: (inputs, targets) or a dict
    loss_fn: Callable[[Any, Any], torch.Tensor] | None = None
    optimizer: torch.optim.Optimizer | None = None
    train_step: Callable[..., Any] | None = None
    loader: Any = None
    num_classes: int | None = None
    source: str = "harness"  # "harness" | "script"
    error: dict | None = None  # {"type", "message", "traceback"} of a captured failure
    extras: dict[str, Any] = field(default_factory=dict)  # other live objects, by name

    @property
    def inputs(self) -> Any:
        return split_batch(self.batch)[0]

    @property
    def targets(self) -> Any:
        return split_batch(self.batch)[1]

    def forward(self, model: nn.Module | None = None, inputs: Any = None) -> Any:
        """Call the model the way the user's code does: positional, tuple or keywords."""
        model = model if model is not None else self.model
        inputs = inputs if inputs is not None else self.inputs
        if isinstance(inputs, dict):
            return model(**inputs)
        if isinstance(inputs, (tuple, list)):
            return model(*inputs)
        return model(inputs)

    def loss(self, output: Any) -> torch.Tensor:
        return self.loss_fn(output, self.targets)

    def step(self) -> Any:
        """One training step: the user's own ``train_step`` when given, else the standard one."""
        if self.train_step is not None:
            return self.train_step(self.model, self.batch, self.loss_fn, self.optimizer)
        if self.optimizer is not None:
            self.optimizer.zero_grad()
        loss = self.loss(self.forward())
        loss.backward()
        if self.optimizer is not None:
            self.optimizer.step()
        return loss


def split_batch(batch: Any) -> tuple[Any, Any]:
    """(inputs, targets) from a tuple/list batch or a dict with a targets-like key."""
    if isinstance(batch, dict):
        key = next((k for k in TARGET_KEYS if k in batch), None)
        inputs = {k: v for k, v in batch.items() if k != key}
        if set(inputs) == {"inputs"} or set(inputs) == {"x"}:
            inputs = next(iter(inputs.values()))
        return inputs, batch.get(key) if key else None
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    return batch, None
