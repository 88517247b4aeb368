"""Watching the user's training loop without changing it.

The loop probes need to see which of zero_grad / backward / step the user's
``train_step`` calls, in which order and from which line, and whether the
model is switched to eval mode on the way. Everything patched here is put
back in ``finally``, and only replicas' optimizers are patched per instance.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.probes._frames import outer_user_frame, user_frame

NORM_LAYERS = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)


@dataclass
class LoopEvent:
    kind: str  # "zero_grad" | "backward" | "step"
    call: int  # which train_step call it happened in
    site: dict | None
    grads_clean: bool = True  # backward only: grads were None/zero before it
    eval_modules: list[str] = field(default_factory=list)  # backward only
    model_training: bool = True  # backward only


@dataclass
class LoopRecorder:
    model: nn.Module
    events: list[LoopEvent] = field(default_factory=list)
    eval_sites: list[dict] = field(default_factory=list)
    eval_step_sites: list[dict] = field(default_factory=list)  # the step's line for each
    call: int = 0

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[LoopEvent]:
        return [e for e in self.events if e.kind == kind]

    def _grads_clean(self) -> bool:
        return all(p.grad is None or not bool(p.grad.any()) for p in self.model.parameters())

    def _eval_modules(self) -> list[str]:
        return [name for name, m in self.model.named_modules()
                if isinstance(m, NORM_LAYERS) and not m.training]

    def on_backward(self) -> None:
        self.events.append(LoopEvent("backward", self.call, user_frame(3),
                                     grads_clean=self._grads_clean(),
                                     eval_modules=self._eval_modules(),
                                     model_training=self.model.training))


@contextlib.contextmanager
def watch_loop(model: nn.Module, optimizer: torch.optim.Optimizer | None
               ) -> Iterator[LoopRecorder]:
    """Record zero_grad / backward / step calls and eval() switches while the block runs."""
    recorder = LoopRecorder(model)
    original_backward = torch.autograd.backward
    original_train = nn.Module.train
    patched: list[tuple[Any, str]] = []

    def backward(*args: Any, **kwargs: Any) -> Any:
        recorder.on_backward()
        return original_backward(*args, **kwargs)

    own = {id(m) for m in model.modules()}

    def train(self: nn.Module, mode: bool = True) -> nn.Module:
        # eval() on the model or on any part of it: where it was called, and the line of
        # the train_step that led there, where a helper (a validation) that leaves eval
        # mode on has to be followed by train().
        if not mode and id(self) in own:
            site = user_frame(2)
            if site is not None:
                recorder.eval_sites.append(site)
                recorder.eval_step_sites.append(outer_user_frame(2) or site)
        return original_train(self, mode)

    def wrap(owner: Any, name: str, kind: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            recorder.events.append(LoopEvent(kind, recorder.call, user_frame(2)))
            return original(*args, **kwargs)

        setattr(owner, name, wrapper)
        patched.append((owner, name))

    try:
        torch.autograd.backward = backward
        nn.Module.train = train
        if optimizer is not None:
            wrap(optimizer, "zero_grad", "zero_grad")
            wrap(optimizer, "step", "step")
        wrap(model, "zero_grad", "zero_grad")
        yield recorder
    finally:
        torch.autograd.backward = original_backward
        nn.Module.train = original_train
        for owner, name in patched:
            with contextlib.suppress(AttributeError):
                delattr(owner, name)
