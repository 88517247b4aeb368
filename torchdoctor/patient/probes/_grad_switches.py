"""Where the user's code switched gradients off, and which modules ran while it was off.

A training step that runs part of the model under ``torch.no_grad()`` (or
``inference_mode``, ``set_grad_enabled(False)``) leaves that part without
gradients, and nothing raises. The line to change is the ``with`` statement,
not the ops inside it, so the switch itself is noted: its ``__enter__`` is
called from the user's ``with`` line. Everything patched is put back on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.probes._frames import user_frame

_SWITCHES = (torch.autograd.grad_mode.no_grad, torch.autograd.grad_mode.inference_mode)


@dataclass
class GradSwitches:
    sites: list[dict] = field(default_factory=list)  # every switch-off, in order
    open: list[dict | None] = field(default_factory=list)  # the switches in force now
    ran_without_grad: dict[str, dict | None] = field(default_factory=dict)  # module → switch


@contextlib.contextmanager
def watching_grad_switches(model: nn.Module) -> Iterator[GradSwitches]:
    """Note each ``no_grad``/``inference_mode`` entered by user code, and the modules of
    ``model`` that ran with gradients off (with the switch in force then)."""
    seen = GradSwitches()
    originals = [(cls, cls.__enter__, cls.__exit__) for cls in _SWITCHES]

    def patched(enter: Any, exit_: Any) -> tuple[Any, Any]:
        def on_enter(self: Any) -> Any:
            site = user_frame(2)
            seen.open.append(site)
            if site is not None:
                seen.sites.append({**site, "op": type(self).__name__})
            return enter(self)

        def on_exit(self: Any, *exc: Any) -> Any:
            if seen.open:
                seen.open.pop()
            return exit_(self, *exc)

        return on_enter, on_exit

    def pre_hook(name: str) -> Any:
        def hook(module: nn.Module, args: Any) -> None:
            if not torch.is_grad_enabled() and name not in seen.ran_without_grad:
                seen.ran_without_grad[name] = next(
                    (s for s in reversed(seen.open) if s is not None), None)
        return hook

    handles = [m.register_forward_pre_hook(pre_hook(n)) for n, m in model.named_modules()]
    try:
        for cls, enter, exit_ in originals:
            cls.__enter__, cls.__exit__ = patched(enter, exit_)
        yield seen
    finally:
        for cls, enter, exit_ in originals:
            cls.__enter__, cls.__exit__ = enter, exit_
        for handle in handles:
            handle.remove()
