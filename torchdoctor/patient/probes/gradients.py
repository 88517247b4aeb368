"""The gradient-flow probe: which parameters a backward pass reaches, and how strongly.

A parameter without a gradient after backward never learns, and nothing
raises: it was unused in forward, cut off by ``.detach()`` / ``no_grad``, or
frozen on purpose. Norms per parameter show vanishing and exploding layers.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch.overrides import TorchFunctionMode

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import replica, standard_optimizer
from torchdoctor.patient.probes._errors import describe_error
from torchdoctor.patient.probes._frames import exception_location, location, user_frame
from torchdoctor.patient.probes._grad_switches import watching_grad_switches
from torchdoctor.patient.probes._modules import module_of, readable_name, top_module
from torchdoctor.patient.probes._training_step import plain_step, total_grad_norm

MAX_LISTED = 50
GROWTH_STEPS = 3


class _GraphCutWatcher(TorchFunctionMode):
    """Records where the user's own code detaches tensors or runs ops with grad disabled."""

    def __init__(self) -> None:
        super().__init__()
        self.cuts: list[dict] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("detach", "detach_") or not torch.is_grad_enabled():
            site = user_frame(2)
            if site is not None:
                self.cuts.append({**site, "op": name if "detach" in name else "no_grad"})
        return func(*args, **(kwargs or {}))


@probe("grad_flow")
def grad_flow(ctx: ProbeContext, vanish: float = 1e-7, explode: float = 1e3) -> dict:
    rep = replica(ctx)
    rep.model.train(ctx.model.training)
    ran: set[str] = set()
    handles = [m.register_forward_hook(lambda mod, i, o, n=n: ran.add(n))
               for n, m in rep.model.named_modules()]
    watcher = _GraphCutWatcher()
    try:
        for p in rep.model.parameters():
            p.grad = None
        with watcher:
            loss = rep.loss(rep.forward())
        loss.backward()
    except Exception as exc:  # noqa: BLE001 - the user's forward failing is a finding
        return result("error", f"forward/backward raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc)}, location(site=exception_location(exc)))
    finally:
        for h in handles:
            h.remove()
    frozen, missing, reasons, norms, nonfinite = [], [], {}, {}, []
    in_step = _step_cuts(ctx)
    for name, p in rep.model.named_parameters():
        if not p.requires_grad:
            frozen.append(name)
        elif p.grad is None:
            missing.append(name)
            reasons[name] = "cut off (detach / no_grad)" if module_of(name) in ran \
                else "unused in forward"
        elif name in in_step:
            missing.append(name)
            reasons[name] = "cut off by no_grad in train_step"
        else:
            norm = float(p.grad.detach().float().norm())
            if math.isfinite(norm):
                norms[name] = norm
            else:
                nonfinite.append(name)
    # Biases right before a norm layer get ~0 gradient by construction; weights never should.
    weights = {n for n, p in rep.model.named_parameters() if p.dim() >= 2}
    vanishing = [n for n, v in norms.items() if v < vanish and n in weights]
    exploding = [n for n, v in norms.items() if v > explode]
    history = _norm_history(ctx) if exploding else []
    growing = len(history) == GROWTH_STEPS and all(
        b > 1.5 * a for a, b in itertools.pairwise(history))
    facts = {
        "no_grad_params": missing[:MAX_LISTED],
        "no_grad_count": len(missing),
        "no_grad_reasons": dict(list(reasons.items())[:MAX_LISTED]),
        "frozen_params": frozen[:MAX_LISTED],
        "frozen_count": len(frozen),
        "vanishing": vanishing[:MAX_LISTED],
        "exploding": exploding[:MAX_LISTED],
        "exploding_growing": growing,
        "norm_history": history,
        "nonfinite_grads": nonfinite[:MAX_LISTED],
        "max_norm": max(norms.values()) if norms else None,
        "min_norm": min(norms.values()) if norms else None,
        "layer_norms": {k: round(v, 8) for k, v in list(norms.items())[:MAX_LISTED]},
        "graph_cuts": ([*{(c["file"], c["line"]): c for c in in_step.values()}.values()]
                       + watcher.cuts)[:5],
    }
    if nonfinite:
        return result("fail", f"non-finite gradients in {len(nonfinite)} parameters, first "
                      f"{nonfinite[0]}", facts, location(module=readable_name(rep.model, module_of(nonfinite[0]))))
    if missing:
        module = readable_name(rep.model, top_module(missing))
        cut = facts["graph_cuts"][0] if facts["graph_cuts"] else None
        answer = result("fail", f"{len(missing)} parameters get no gradient ({module}: "
                        f"{reasons[missing[0]]})", facts,
                        location(module=module, op=cut and cut["op"], site=cut))
        if in_step:
            # The switch the user's step turned gradients off with is the line to change.
            answer["fix_at"] = cut
        return answer
    if exploding:
        trend = ", growing each step" if growing else ""
        return result("fail", f"exploding gradients (> {explode:g}) in {len(exploding)} "
                      f"parameters{trend}, first {exploding[0]}", facts,
                      location(module=readable_name(rep.model, module_of(exploding[0]))))
    if vanishing:
        return result("warn", f"vanishing gradients (< {vanish:g}) in {len(vanishing)} "
                      f"parameters, first {vanishing[0]}", facts,
                      location(module=readable_name(rep.model, module_of(vanishing[0]))))
    frozen_note = f"; {len(frozen)} frozen" if frozen else ""
    return result("pass", f"every trainable parameter gets a finite gradient (norms "
                  f"{facts['min_norm']:.2g}–{facts['max_norm']:.2g}){frozen_note}", facts)


def _step_cuts(ctx: ProbeContext) -> dict[str, dict]:
    """Parameters the user's own ``train_step`` leaves without a gradient because their
    module ran under a ``no_grad`` it entered, each with that switch's line.

    The plain forward above is the model's; the step is how the harness trains it,
    and a step that encodes its inputs under ``no_grad`` cuts a graph the model's
    forward alone keeps whole. Only read when the step ran a backward that reached
    some parameter: a step without backward says nothing about any of them.
    """
    if ctx.train_step is None or ctx.optimizer is None:
        return {}
    rep = replica(ctx)
    rep.model.train(ctx.model.training)
    reached: set[str] = set()
    trainable = [(n, p) for n, p in rep.model.named_parameters() if p.requires_grad]
    handles = [p.register_post_accumulate_grad_hook(lambda p, n=n: reached.add(n))
               for n, p in trainable]
    try:
        with watching_grad_switches(rep.model) as switches:
            rep.step()
    except Exception:  # noqa: BLE001 - the step's own failure is other probes' finding
        return {}
    finally:
        for handle in handles:
            handle.remove()
    if not reached:
        return {}
    cut = {}
    for name, _ in trainable:
        module = module_of(name)
        if name not in reached and module in switches.ran_without_grad:
            site = switches.ran_without_grad[module]
            if site is not None:
                cut[name] = {**site, "op": "no_grad"}
    return cut


def _norm_history(ctx: ProbeContext) -> list[float]:
    """Total gradient norm over a few plain steps, to tell a spike from a growing blow-up."""
    rep = replica(ctx)
    optimizer = standard_optimizer(rep)
    history = []
    try:
        for _ in range(GROWTH_STEPS):
            plain_step(rep, optimizer)
            history.append(total_grad_norm(rep.model))
    except Exception:  # noqa: BLE001 - the history is extra evidence; the first step stands
        return history
    return history
