"""Training-sanity probes: the checks for training that runs but does not learn.

Each probe works on a replica of the user's model and optimizer, so the
user's objects leave every probe exactly as they came in.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from torchdoctor.patient.built_at import optimizer_built_at
from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._modules import readable_name
from torchdoctor.patient.probes._replica import (
    describe_error,
    exception_location,
    finite,
    loss_value,
    module_of,
    plain_step,
    replica,
    standard_optimizer,
    top_module,
    user_frame,
)
from torchdoctor.patient.probes._util import location
from torchdoctor.patient.probes._watch import watch_loop

MAX_LISTED = 50
EARLY_STOP = 5  # consecutive low losses that end overfit_batch early


def _train_once(rep: ProbeContext) -> Any:
    """The user's own step when it can run (it needs an optimizer), else the standard loop."""
    if rep.train_step is not None or rep.optimizer is not None:
        return rep.step()
    return plain_step(rep, standard_optimizer(rep))


@probe("weights_update")
def weights_update(ctx: ProbeContext) -> dict:
    rep = replica(ctx)
    before = {n: p.detach().clone() for n, p in rep.model.named_parameters()}
    in_optimizer: dict[int, float] = {}
    if rep.optimizer is not None:
        for group in rep.optimizer.param_groups:
            for p in group["params"]:
                in_optimizer[id(p)] = float(group.get("lr", 0.0))
    try:
        with watch_loop(rep.model, rep.optimizer) as loop:
            rep.model.train(ctx.model.training)
            _train_once(rep)
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"train_step raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc)}, location(site=exception_location(exc)))
    step_called = bool(loop.of("step")) or rep.optimizer is None
    reasons: dict[str, str] = {}
    for name, p in rep.model.named_parameters():
        if not torch.equal(p.detach(), before[name]):
            continue
        if not p.requires_grad:
            reasons[name] = "frozen (requires_grad=False)"
        elif rep.optimizer is not None and id(p) not in in_optimizer:
            reasons[name] = "not in the optimizer's param_groups"
        elif not step_called:
            reasons[name] = "optimizer.step() was never called"
        elif in_optimizer.get(id(p)) == 0.0:
            reasons[name] = "learning rate is 0 in its param group"
        elif p.grad is None:
            reasons[name] = "received no gradient"
        else:
            reasons[name] = "its gradient is zero"
    frozen = [n for n, r in reasons.items() if r.startswith("frozen")]
    stuck = [n for n in reasons if n not in frozen]
    not_in_opt = [n for n, r in reasons.items() if r.startswith("not in")]
    lr_zero = any(r.startswith("learning rate") for r in reasons.values())
    total = len(before)
    facts = {
        "unchanged_params": list(reasons)[:MAX_LISTED],
        "unchanged_count": len(reasons),
        "changed_count": total - len(reasons),
        "lr_zero": lr_zero,
        "not_in_optimizer": not_in_opt[:MAX_LISTED],
        "not_in_optimizer_count": len(not_in_opt),
        "frozen_count": len(frozen),
        "step_called": step_called,
        "step_calls": len(loop.of("step")),
        "reasons": dict(list(reasons.items())[:MAX_LISTED]),
        "used_train_step": ctx.train_step is not None,
        "optimizer_built_at": None,
    }
    if not stuck:
        note = f" ({len(frozen)} frozen by requires_grad=False)" if frozen else ""
        return result("pass", f"all {total - len(frozen)} trainable parameters changed after "
                      f"one step{note}", facts)
    if not step_called:
        backwards = loop.of("backward")
        site = backwards[-1].site if backwards else None
        return result("fail", "optimizer.step() is never called: no parameter changes",
                      facts, location(op="step", site=site))
    first_reason = reasons[stuck[0]]
    answer = result("fail", f"{len(stuck)} of {total} parameters did not change after one "
                    f"step: {stuck[0]} ({first_reason})", facts,
                    location(module=readable_name(rep.model, top_module(stuck))))
    if not_in_opt:
        # The optimizer holds what the model had when it was built: the fix is to build it
        # from the model as trained, so the construction line is where it belongs.
        answer["fix_at"] = facts["optimizer_built_at"] = optimizer_built_at(ctx.optimizer)
    return answer


@probe("loop_order")
def loop_order(ctx: ProbeContext, steps: int = 3) -> dict:
    rep = replica(ctx)
    if rep.train_step is None and rep.optimizer is None:
        rep.optimizer = standard_optimizer(rep)
    try:
        with watch_loop(rep.model, rep.optimizer) as loop:
            rep.model.train(ctx.model.training)
            for call in range(max(1, steps)):
                loop.call = call
                rep.step()
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"train_step raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "order": loop.kinds()},
                      location(site=exception_location(exc)))
    order = loop.kinds()
    backwards = loop.of("backward")
    accumulating_at = _stale_backward(loop.events)
    step_first = _step_before_backward(loop.events)
    cleared_at = _zero_grad_before_step(loop.events)
    eval_at = next((e for e in backwards if not e.model_training or e.eval_modules), None)
    facts = {
        "order": order[:60],
        "zero_grad_called": bool(loop.of("zero_grad")),
        "accumulating": accumulating_at is not None,
        "step_before_backward": step_first is not None,
        "zero_grad_before_step": cleared_at is not None,
        "eval_mode_during_training": eval_at is not None,
        "eval_modules": eval_at.eval_modules[:MAX_LISTED] if eval_at else [],
        "backward_calls": len(backwards),
        "step_calls": len(loop.of("step")),
        "train_step_calls": max(1, steps),
    }
    if step_first is not None:
        return result("fail", "optimizer.step() runs before loss.backward(): each step uses "
                      "the previous batch's gradients", facts,
                      location(op="step", site=step_first.site))
    if cleared_at is not None:
        return result("fail", "zero_grad() runs between loss.backward() and optimizer.step(): "
                      "the step finds no gradients, so no parameter changes", facts,
                      location(op="zero_grad", site=cleared_at.site))
    if accumulating_at is not None:
        return result("fail", "gradients accumulate across steps: no zero_grad() between "
                      "optimizer.step() and the next backward()", facts,
                      location(op="backward", site=accumulating_at.site))
    if eval_at is not None:
        site = loop.eval_sites[-1] if loop.eval_sites else None
        module = eval_at.eval_modules[0] if eval_at.eval_modules else ""
        kinds = {name: type(m).__name__ for name, m in rep.model.named_modules()}
        what = ", ".join(f"`{name}` ({kinds[name]})" if name in kinds else f"`{name}`"
                         for name in eval_at.eval_modules[:3])
        answer = result("fail", f"training runs with {what or 'the whole model'} in eval "
                        "mode: dropout is off and batch-norm statistics are frozen", facts,
                        location(module=module, op="eval", site=site))
        # The step's own line that led to eval(): train mode is restored after it.
        answer["fix_at"] = loop.eval_step_sites[-1] if loop.eval_step_sites else None
        return answer
    if not backwards:
        return result("warn", "train_step never called backward()", facts)
    if not loop.of("step"):
        return result("warn", "train_step never called optimizer.step()", facts,
                      location(op="step", site=backwards[-1].site))
    return result("pass", "loop order " + " → ".join(order[: len(order) // max(1, steps)])
                  + " on every step", facts)


def _stale_backward(events: list) -> Any:
    """The first backward after a step that found the previous step's gradients still there."""
    after_step = False
    for event in events:
        if event.kind == "step":
            after_step = True
        elif event.kind == "zero_grad":
            after_step = False
        elif event.kind == "backward":
            if after_step and not event.grads_clean:
                return event
            after_step = False
    return None


def _zero_grad_before_step(events: list) -> Any:
    """A zero_grad that clears the gradients a backward just made, before the step uses them.

    The order backward → zero_grad → step is the one order whose every call
    is present and still trains nothing, so a check that only looks for the
    three calls passes on it.
    """
    pending: Any = None  # the zero_grad seen since the last backward, if any
    backward_seen = False
    for event in events:
        if event.kind == "backward":
            backward_seen, pending = True, None
        elif event.kind == "zero_grad" and backward_seen:
            pending = pending or event
        elif event.kind == "step":
            if pending is not None:
                return pending
            backward_seen = False
    return None


def _step_before_backward(events: list) -> Any:
    """A step that comes before the backward of the same train_step call."""
    calls = sorted({e.call for e in events})
    for call in calls:
        kinds = [e for e in events if e.call == call and e.kind in ("step", "backward")]
        if len(kinds) >= 2 and kinds[0].kind == "step":
            return kinds[0]
    return None


def _classes(ctx: ProbeContext, output: Any) -> tuple[str, int | None]:
    """("multiclass"|"binary"|"other", C) from the loss, the targets and the output."""
    targets = ctx.targets
    name = type(ctx.loss_fn).__name__ if isinstance(ctx.loss_fn, nn.Module) else ""
    if "BCE" in name:
        return "binary", 2
    if not isinstance(output, torch.Tensor) or not isinstance(targets, torch.Tensor):
        return "other", None
    if targets.dtype in (torch.long, torch.int, torch.int16, torch.int8, torch.uint8) \
            and output.dim() >= 2 and output.shape[0] == targets.shape[0]:
        width = output.shape[1]
        return "multiclass", ctx.num_classes or int(width)
    if output.is_floating_point() and targets.shape == output.shape \
            and targets.is_floating_point() and bool(((targets == 0) | (targets == 1)).all()) \
            and ("Logits" in name or name == "" and bool((output.abs() > 1).any())):
        return "binary", 2
    return "other", None


@probe("loss_at_init")
def loss_at_init(ctx: ProbeContext) -> dict:
    rep = replica(ctx)
    try:
        with torch.no_grad():
            output = rep.forward()
            loss = float(rep.loss(output))
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"forward/loss raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc)}, location(site=exception_location(exc)))
    kind, classes = _classes(rep, output)
    facts: dict[str, Any] = {"loss": loss if finite(loss) else str(loss), "kind": kind,
                             "num_classes": classes, "ln_classes": None, "ratio": None,
                             "exactly_ln_classes": None}
    if not finite(loss):
        return result("fail", f"the loss of the untrained model is already {loss}", facts)
    if not classes or classes < 2:
        return result("inconclusive", "not a classification loss: no log(C) to compare with",
                      facts)
    ln_c = math.log(classes)
    ratio = loss / ln_c
    facts.update(ln_classes=round(ln_c, 4), ratio=round(ratio, 3),
                 exactly_ln_classes=abs(ratio - 1) < 0.005)
    if ratio > 2.5 and loss - ln_c > 1.0:
        return result("warn", f"loss at init {loss:.3f} is {ratio:.1f}× ln({classes}) = "
                      f"{ln_c:.3f}: initialisation or input scale makes confident wrong "
                      "predictions", facts)
    note = " (exactly ln C: uniform predictions; if it stays there nothing learns)" \
        if facts["exactly_ln_classes"] else ""
    return result("pass", f"loss at init {loss:.3f} ≈ ln({classes}) = {ln_c:.3f}{note}", facts)


class _HeadWatcher(TorchFunctionMode):
    """Records activation and loss calls (with the user's line) during forward and loss,
    which op made each tensor, and what the loss did with the model's output."""

    ACTIVATIONS = frozenset({"softmax", "log_softmax", "sigmoid"})
    LOSSES = frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits"})
    # Ops that only move or select values: the output of a view of x has x's sign.
    SHAPE_ONLY = frozenset({"view", "reshape", "squeeze", "unsqueeze", "flatten", "__getitem__",
                            "contiguous", "clone", "permute", "transpose", "t", "expand"})
    # The loss turns its input into a probability through a sigmoid.
    SQUASHING = frozenset({"sigmoid", "binary_cross_entropy_with_logits"})

    def __init__(self) -> None:
        super().__init__()
        self.activations: list[tuple[str, dict | None]] = []
        self.losses: list[str] = []
        self.made: dict[int, tuple[str, dict | None, Any]] = {}  # id → (op, site, inputs)
        self.keep: list[Any] = []  # the tensors ``made`` names, alive while we watch
        self.output: Any = None  # set between forward and loss
        self.squashed_output = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        site = None
        if name in self.ACTIVATIONS:
            site = user_frame(2)
            self.activations.append((name, site))
        elif name in self.LOSSES:
            self.losses.append(name)
        if self.output is not None and name in self.SQUASHING and args \
                and self._root(args[0]) is self._root(self.output):
            self.squashed_output = True
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            self.made[id(out)] = (name, site or user_frame(2), tensors[:1])
            self.keep.append(out)
        return out

    def _root(self, tensor: Any) -> Any:
        """The tensor a chain of shape-only ops started from."""
        while isinstance(tensor, torch.Tensor) and id(tensor) in self.made:
            name, _, inputs = self.made[id(tensor)]
            if name not in self.SHAPE_ONLY or not inputs:
                break
            tensor = inputs[0]
        return tensor

    def producer(self, tensor: Any) -> tuple[str | None, dict | None]:
        """The op (past views) that made ``tensor`` in forward, and the user's line of it."""
        name, site, _ = self.made.get(id(self._root(tensor)), (None, None, None))
        return name, site


# Ops whose result is never negative: sigmoid(x) of such an x is at least 0.5.
NONNEGATIVE = frozenset({"relu", "relu_", "relu6", "softplus", "abs", "exp", "sigmoid",
                         "softmax", "square"})


def _last_leaf(model: nn.Module, ctx: ProbeContext) -> tuple[str, nn.Module | None]:
    order: list[tuple[str, nn.Module]] = []
    handles = [m.register_forward_hook(lambda mod, i, o, n=n: order.append((n, mod)))
               for n, m in model.named_modules() if not list(m.children())]
    try:
        with torch.no_grad():
            ctx.forward(model)
    finally:
        for h in handles:
            h.remove()
    return order[-1] if order else ("", None)


def _head_shape(output: torch.Tensor) -> dict:
    out = output.detach().float()
    in_unit = bool(((out >= 0) & (out <= 1)).all())
    rows_sum_one = out.dim() >= 2 and out.shape[1] > 1 and in_unit and bool(
        torch.allclose(out.sum(1), torch.ones_like(out.sum(1)), atol=1e-3))
    log_probs = out.dim() >= 2 and out.shape[1] > 1 and bool((out <= 0).all()) and bool(
        torch.allclose(out.logsumexp(1), torch.zeros_like(out.sum(1)), atol=1e-3))
    return {"in_unit": in_unit, "probs": rows_sum_one, "log_probs": log_probs}


@probe("output_head")
def output_head(ctx: ProbeContext) -> dict:
    rep = replica(ctx)
    watcher = _HeadWatcher()
    loss_error = None
    try:
        with torch.no_grad(), watcher:
            output = rep.forward()
            watcher.output = output
            try:
                rep.loss(output)
            except Exception as exc:  # noqa: BLE001 - BCELoss refuses values outside [0, 1]
                loss_error = exc
        head_name, _ = _last_leaf(rep.model, rep)
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"forward raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc)}, location(site=exception_location(exc)))
    facts: dict[str, Any] = {"softmax_before_ce": False, "logits_into_bce": False,
                             "output_floor_before_sigmoid": False, "output_made_by": None,
                             "sigmoid_before_bce_logits": False, "head_width": None,
                             "num_classes": rep.num_classes, "width_mismatch": False,
                             "loss_functions": sorted(set(watcher.losses)),
                             "head_module": head_name}
    if not isinstance(output, torch.Tensor) or not output.is_floating_point():
        return result("inconclusive", "the model's output is not a single float tensor", facts)
    shape = _head_shape(output)
    losses = set(watcher.losses)
    facts["head_width"] = int(output.shape[1]) if output.dim() >= 2 else 1
    facts["output_range"] = [float(output.min()), float(output.max())]
    act = watcher.activations[-1] if watcher.activations else (None, None)
    act_site = act[1]
    targets = rep.targets
    if "cross_entropy" in losses and isinstance(targets, torch.Tensor) \
            and not targets.is_floating_point():
        classes = int(targets.max()) + 1 if targets.numel() else None
        expected = rep.num_classes or classes
        facts["num_classes"] = expected
        facts["target_max"] = int(targets.max()) if targets.numel() else None
        facts["width_mismatch"] = bool(
            (rep.num_classes and rep.num_classes != facts["head_width"])
            or (classes and classes > facts["head_width"]))
    if "cross_entropy" in losses and shape["probs"]:
        facts["softmax_before_ce"] = True
        return result("fail", "the model already applies softmax before CrossEntropyLoss, "
                      "which applies log_softmax itself: gradients shrink and the loss "
                      "stalls", facts, location(module=head_name, op="softmax", site=act_site))
    if "binary_cross_entropy_with_logits" in losses and shape["in_unit"] \
            and act[0] == "sigmoid":
        facts["sigmoid_before_bce_logits"] = True
        return result("fail", "the model applies sigmoid before BCEWithLogitsLoss, which "
                      "applies it again", facts,
                      location(module=head_name, op="sigmoid", site=act_site))
    made_by, made_at = watcher.producer(output)
    if watcher.squashed_output and made_by in NONNEGATIVE:
        facts.update(output_floor_before_sigmoid=True, output_made_by=made_by)
        answer = result("fail", f"the model's output comes out of {made_by}, so it is never "
                        "negative, and the loss passes it through a sigmoid: every "
                        "probability is at least 0.5 and the negative class can never be "
                        "predicted", facts, location(module=head_name, op=made_by,
                                                     site=made_at))
        answer["fix_at"] = made_at
        return answer
    if "binary_cross_entropy" in losses and (not shape["in_unit"] or loss_error is not None):
        facts["logits_into_bce"] = True
        return result("fail", "raw logits (outside [0, 1]) are fed to BCELoss, which expects "
                      "probabilities: use BCEWithLogitsLoss", facts,
                      location(module=head_name, op="binary_cross_entropy"))
    if "nll_loss" in losses and "cross_entropy" not in losses and not shape["log_probs"]:
        return result("fail", "NLLLoss receives outputs that are not log-probabilities "
                      "(no log_softmax at the end)", facts,
                      location(module=head_name, op="nll_loss"))
    if facts["width_mismatch"]:
        return result("fail", f"the final layer emits {facts['head_width']} classes but the "
                      f"targets need {facts['num_classes']}", facts,
                      location(module=head_name))
    if loss_error is not None:
        return result("error", f"the loss raised {type(loss_error).__name__}: {loss_error}",
                      {**facts, "error": describe_error(loss_error)},
                      location(site=exception_location(loss_error)))
    if "cross_entropy" in losses and shape["log_probs"]:
        return result("warn", "log_softmax before CrossEntropyLoss is redundant (harmless)",
                      facts, location(module=head_name, op="log_softmax", site=act_site))
    return result("pass", f"output head of width {facts['head_width']} matches the loss "
                  f"({', '.join(sorted(losses)) or _loss_name(rep.loss_fn)})", facts)


def _loss_name(loss_fn: Any) -> str:
    """'MSELoss' for a module, 'bce' for a plain function: never the word 'function'."""
    return getattr(loss_fn, "__name__", None) or type(loss_fn).__name__


def _low(loss: float, initial: float) -> bool:
    """Close enough to zero to say the model can fit this batch."""
    return loss < 0.1 * initial or loss < 0.05


# Slow or stalled: see docs/checks.md ("overfit_batch"). Near a minimum, gradient
# descent shrinks the loss by a roughly constant factor per step, so the curve's
# average rate says how many steps fitting the batch (the loss at a tenth of its
# start) would take. A setup that would need more than PATIENCE times the probe's
# step budget to fit the easiest possible data set is not training: a broken step.
PATIENCE = 10


def _steps_to_fit(initial: float, final: float, ran: int) -> int | None:
    """Steps the observed geometric rate needs to bring the loss to a tenth of its start;
    None when the loss did not fall at all."""
    if not (finite(initial) and finite(final)) or initial <= 0 or not 0 < final < initial:
        return None
    per_step = math.log(final / initial) / max(1, ran - 1)
    return math.ceil(math.log(0.1) / per_step)


def _downsample(values: list[float], points: int = 20) -> list[float]:
    if len(values) <= points:
        return [round(v, 6) for v in values]
    stride = (len(values) - 1) / (points - 1)
    return [round(values[round(i * stride)], 6) for i in range(points)]


@probe("overfit_batch")
def overfit_batch(ctx: ProbeContext, steps: int = 150, seconds: float = 20.0) -> dict:
    rep = replica(ctx)
    rep.model.train()
    use_own = rep.train_step is not None and rep.optimizer is not None
    optimizer = rep.optimizer if use_own else standard_optimizer(rep)
    losses: list[float] = []
    deadline = time.monotonic() + seconds
    out_of_time = False
    try:
        for _ in range(max(1, steps)):
            value = loss_value(rep.step()) if use_own else plain_step(rep, optimizer)
            if value is None:
                with torch.no_grad():
                    value = float(rep.loss(rep.forward()))
            losses.append(value)
            out_of_time = time.monotonic() > deadline and len(losses) < steps
            if not finite(value) or out_of_time \
                    or all(_low(v, losses[0]) for v in losses[-EARLY_STOP:]) \
                    and len(losses) >= EARLY_STOP:
                break
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"training raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "curve": _downsample(losses)},
                      location(site=exception_location(exc)))
    initial, final = losses[0], losses[-1]
    reduction = final / initial if finite(initial) and initial else None
    learned = finite(final) and _low(final, initial)
    facts = {"initial_loss": initial if finite(initial) else str(initial),
             "final_loss": final if finite(final) else str(final),
             "reduction": round(reduction, 4) if finite(reduction) else None,
             "learned": bool(learned), "curve": _downsample(losses), "steps_run": len(losses),
             "used_train_step": use_own,
             "steps_to_fit": _steps_to_fit(initial, final, len(losses)),
             "patience_steps": PATIENCE * max(1, steps), "out_of_time": out_of_time,
             "loss_reads_targets": None}
    if not finite(final):
        return result("fail", f"loss turned {final} after {len(losses)} steps on one batch",
                      facts)
    if learned:
        return result("pass", f"overfits one batch: loss {initial:.4g} → {final:.4g} in "
                      f"{len(losses)} steps", facts)
    facts["loss_reads_targets"] = _reads_targets(ctx)
    if facts["loss_reads_targets"] is False:
        # "Near zero" is the floor of a loss that scores outputs against targets a model
        # can memorise; a loss that ignores the targets (a likelihood of the inputs, a
        # self-supervised objective) has its own floor above zero, unknown here.
        return result("inconclusive", f"the loss does not read the targets, so its floor "
                      f"is not zero: {initial:.4g} → {final:.4g} after {len(losses)} steps "
                      "says nothing about whether the step works", facts)
    if out_of_time:
        # The claim is about `steps` steps; how far a loss falls in fewer says nothing of
        # where it goes (the first steps of Adam or of a warm-up move it least), and how
        # many fit in the time depends on the machine, not on the training.
        return result("inconclusive", f"ran out of its {seconds:g} s after {len(losses)} of "
                      f"{steps} steps (loss {initial:.4g} → {final:.4g}), too few to tell a "
                      "slow fit from a broken step", facts)
    projected = facts["steps_to_fit"]
    if projected is not None and projected <= facts["patience_steps"]:
        return result("warn", f"learns one batch slowly: loss {initial:.4g} → {final:.4g} "
                      f"after {len(losses)} steps, near zero in about {projected} at this "
                      "rate", facts)
    moved = ("rises" if final > initial else "does not fall" if final >= 0.999 * initial
             else "barely falls")
    return result("fail", f"cannot overfit one batch: the loss {moved}, {initial:.4g} → "
                  f"{final:.4g} after {len(losses)} steps", facts)


def _reads_targets(ctx: ProbeContext) -> bool | None:
    """Whether the loss changes when the targets do (None when that cannot be tried).

    Targets are shifted by one (modulo one more class than the largest, for class
    indices); a loss that raises on the shifted targets reads them too.
    """
    targets = ctx.targets
    if not isinstance(ctx.batch, (tuple, list)) or not isinstance(targets, torch.Tensor) \
            or targets.numel() == 0 or targets.dtype == torch.bool:
        return None
    if targets.is_floating_point():
        shifted = targets + 1
    else:
        shifted = (targets + 1) % (int(targets.max()) + 2)
    rep = replica(ctx)
    try:
        with torch.no_grad():
            output = rep.forward()
            same = torch.equal(torch.as_tensor(rep.loss_fn(output, targets)),
                               torch.as_tensor(rep.loss_fn(output, shifted)))
    except Exception:  # noqa: BLE001 - refusing the shifted targets is reading them
        return True
    return not same


@probe("lr_range")
def lr_range(ctx: ProbeContext, low: float = 1e-6, high: float = 10.0, points: int = 8
             ) -> dict:
    rep = replica(ctx)
    rep.model.train()
    start = {k: v.clone() for k, v in rep.model.state_dict().items()}
    user_lr = float(ctx.optimizer.param_groups[0]["lr"]) if ctx.optimizer else None
    points = max(2, points)
    rates = [low * (high / low) ** (i / (points - 1)) for i in range(points)]
    if user_lr and user_lr > 0:
        rates = sorted(set(rates) | {user_lr})
    losses: dict[str, Any] = {}
    initial = None
    diverge_lr = None
    try:
        for lr in rates:
            rep.model.load_state_dict(start)
            optimizer = standard_optimizer(rep, lr=lr)
            first = plain_step(rep, optimizer)
            initial = first if initial is None else initial
            for _ in range(4):
                plain_step(rep, optimizer)
            with torch.no_grad():
                last = float(rep.loss(rep.forward()))
            losses[f"{lr:.3g}"] = last if finite(last) else str(last)
            if diverge_lr is None and (not finite(last) or last > 4 * abs(initial)):
                diverge_lr = float(f"{lr:.3g}")
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"training raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "losses": losses},
                      location(site=exception_location(exc)))
    finite_losses = {k: v for k, v in losses.items() if isinstance(v, float)}
    best = min(finite_losses, key=finite_losses.get) if finite_losses else None
    facts = {"losses": losses, "best_lr": float(best) if best else None,
             "diverge_lr": diverge_lr, "user_lr": user_lr, "initial_loss": initial}
    if user_lr is not None and diverge_lr is not None and user_lr >= diverge_lr:
        return result("fail", f"the learning rate {user_lr:g} is at or above where the loss "
                      f"diverges ({diverge_lr:.3g}); best in the sweep {best}", facts)
    where = f"diverges from {diverge_lr:.3g}" if diverge_lr else "never diverges"
    return result("pass", f"best lr in the sweep {best}; loss {where}", facts)


@probe("determinism")
def determinism(ctx: ProbeContext) -> dict:
    runs = []
    try:
        for _ in range(2):
            runs.append(_seeded_gradients(ctx))
    except Exception as exc:  # noqa: BLE001 - the user's code failing is a finding
        return result("error", f"forward/backward raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc)}, location(site=exception_location(exc)))
    (loss_a, grads_a), (loss_b, grads_b) = runs
    differing = [n for n in grads_a if n in grads_b and not torch.equal(grads_a[n], grads_b[n])]
    same_loss = loss_a == loss_b or (math.isnan(loss_a) and math.isnan(loss_b))
    deterministic = same_loss and not differing and grads_a.keys() == grads_b.keys()
    risks = _determinism_risks(ctx)
    facts = {"deterministic": deterministic, "sources": [] if deterministic else risks,
             "risks": risks, "loss_difference": None if same_loss else abs(loss_a - loss_b),
             "differing_grads": differing[:MAX_LISTED]}
    if deterministic:
        return result("pass", "the same step from the same seed gives identical loss and "
                      "gradients", facts)
    sources = ", ".join(risks) or "an unseeded random source in the model or loss"
    first = differing[0] if differing else None
    return result("fail", f"the same step from the same seed differs; sources: {sources}",
                  facts, location(module=readable_name(ctx.model, module_of(first))) if first else None)


def _seeded_gradients(ctx: ProbeContext) -> tuple[float, dict[str, torch.Tensor]]:
    import random

    rep = replica(ctx)
    for p in rep.model.parameters():
        p.grad = None
    torch.manual_seed(0)
    random.seed(0)
    loss = rep.loss(rep.forward())
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in rep.model.named_parameters()
             if p.grad is not None}
    return float(loss.detach()), grads


def _determinism_risks(ctx: ProbeContext) -> list[str]:
    risks = []
    dropout = [n for n, m in ctx.model.named_modules()
               if isinstance(m, nn.modules.dropout._DropoutNd) and m.training and m.p > 0]
    if dropout:
        risks.append(f"dropout in train mode ({', '.join(dropout[:3])})")
    loader = ctx.loader
    if loader is not None and isinstance(getattr(loader, "sampler", None),
                                         torch.utils.data.RandomSampler) \
            and getattr(loader, "generator", None) is None:
        risks.append("DataLoader shuffles without a seeded generator")
    if torch.backends.cudnn.benchmark:
        risks.append("torch.backends.cudnn.benchmark is True")
    if torch.cuda.is_available() and not torch.backends.cudnn.deterministic:
        risks.append("torch.backends.cudnn.deterministic is False")
    if not torch.are_deterministic_algorithms_enabled() and any(
            p.is_cuda for p in ctx.model.parameters()):
        risks.append("nondeterministic CUDA ops allowed (use_deterministic_algorithms off)")
    return risks
