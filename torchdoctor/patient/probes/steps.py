"""The first training step at which something turns NaN or Inf.

"NaN after epoch 6" is found by running the user's own steps on a replica
and checking loss, gradients and parameters after each; the bad step is then
replayed from the same seed under an op watcher that names the first op (and
the user's line) whose output is not finite.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import replica, standard_optimizer
from torchdoctor.patient.probes._errors import describe_error
from torchdoctor.patient.probes._frames import exception_location, location, user_frame
from torchdoctor.patient.probes._modules import module_of
from torchdoctor.patient.probes._tensors import all_finite, all_finite_in
from torchdoctor.patient.probes._training_step import (
    finite,
    loss_value,
    plain_step,
    total_grad_norm,
)

SEED = 0


class _FirstNonFinite(TorchFunctionMode):
    """Stops looking at the first op whose floating output holds NaN or Inf."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.found is None and not all_finite_in(out):
            self.found = {"op": getattr(func, "__name__", str(func)), "site": user_frame(2)}
        return out


def _stepper(rep: ProbeContext):
    if rep.train_step is not None and rep.optimizer is not None:
        return lambda: loss_value(rep.step())
    optimizer = rep.optimizer or standard_optimizer(rep)
    return lambda: plain_step(rep, optimizer)


def _first_bad(rep: ProbeContext, loss: float | None) -> tuple[str, str | None] | None:
    if loss is not None and not finite(loss):
        return "loss", None
    for name, p in rep.model.named_parameters():
        if p.grad is not None and not all_finite(p.grad):
            return "grad", name
    for name, p in rep.model.named_parameters():
        if not all_finite(p):
            return "param", name
    return None


@probe("nonfinite_steps")
def nonfinite_steps(ctx: ProbeContext, steps: int = 50) -> dict:
    rep = replica(ctx)
    rep.model.train()
    step = _stepper(rep)
    history: list[float] = []
    bad = None
    torch.manual_seed(SEED)
    try:
        for index in range(max(1, steps)):
            loss = step()
            history.append(total_grad_norm(rep.model))
            bad = _first_bad(rep, loss)
            if bad is not None:
                break
    except Exception as exc:  # noqa: BLE001 - the user's step failing is a finding
        return result("error", f"train_step raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "grad_norm_history": history},
                      location(site=exception_location(exc)))
    facts = {"first_bad_step": None, "what": None, "name": None,
             "grad_norm_history": [round(h, 6) if finite(h) else str(h) for h in history],
             "steps_run": len(history), "op": None}
    if bad is None:
        return result("pass", f"loss, gradients and parameters stay finite for {len(history)} "
                      "steps", facts)
    what, name = bad
    facts.update(first_bad_step=index, what=what, name=name)
    op = _replay_to_op(ctx, index)
    facts["op"] = op and op["op"]
    module = module_of(name) if name else None
    site = op["site"] if op else None
    named = f" ({name})" if name else ""
    at = f" at {op['op']}" if op else ""
    return result("fail", f"the {what}{named} turns non-finite at step {index}{at}", facts,
                  location(module=module, op=op and op["op"], site=site))


def _replay_to_op(ctx: ProbeContext, bad_step: int) -> dict | None:
    """Rerun the steps before the bad one from the same seed, then watch the bad one's forward."""
    rep = replica(ctx)
    rep.model.train()
    step = _stepper(rep)
    torch.manual_seed(SEED)
    watcher = _FirstNonFinite()
    try:
        for _ in range(bad_step):
            step()
        with torch.no_grad(), watcher:
            rep.loss(rep.forward())
    except Exception:  # noqa: BLE001 - the replay only adds a location to a found step
        return None
    return watcher.found
