"""The ``bisect`` probe: halve the search until one leaf module, or one training step, is left.

An error raised by a parent's own code between its children (glue code:
a ``view`` after a ``permute``) is no leaf's fault: the probe says so, with
the parent, the line, the children before and after, and the shapes that
reached the failing op, instead of bisecting.

Each rerun is recorded as ``{lo, hi, cut, ran, outcome}`` so a person can
follow the search in the UI and restart it from their own ``lo``/``hi``.
Over modules, a rerun runs the forward only up to the ``cut``-th leaf and
asks whether the failure (an error, or a non-finite output) already
happened. Over steps, training runs on the user's objects from a saved
state (restored afterwards) with checkpoints; the search then replays from
the last good checkpoint.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._frames import exception_location, file_name
from torchdoctor.patient.probes._modules import is_leaf, module_label, readable_name, short_label
from torchdoctor.patient.probes._tensors import all_finite, all_finite_in
from torchdoctor.patient.probes.trace import ModuleRecorder, OpRecorder


class _Stop(Exception):
    """Raised from a hook once the prefix being tested has run."""


class PrefixRun:
    """Runs the forward up to leaf number ``cut`` (in execution order) and judges it."""

    def __init__(self, ctx: ProbeContext, order: list[str]):
        self.ctx = ctx
        self.order = order
        self.index = {path: i for i, path in enumerate(order)}
        self.runs = 0

    def __call__(self, cut: int | None) -> dict[str, Any]:
        """Outcome of one run: bad (with why and where) or good; ``cut=None`` runs it all."""
        self.runs += 1
        seen: list[str] = []
        verdict: dict[str, Any] = {"outcome": "good", "bad_at": None, "why": None}

        def after_leaf(path: str, module: nn.Module, args: tuple, output: Any) -> None:
            position = self.index.get(path)
            if position is None or path in seen:
                return
            seen.append(path)
            if not all_finite_in(output):
                verdict.update(outcome="bad", bad_at=position, why="non-finite output")
                raise _Stop
            if cut is not None and position >= cut:
                raise _Stop

        recorder = ModuleRecorder(self.ctx.model, ring=1, on_output=after_leaf)
        with preserved(self.ctx.model, parameters=False), torch.no_grad():
            try:
                with recorder:
                    self.ctx.forward()
            except _Stop:
                pass
            except Exception as exc:  # noqa: BLE001 - the user's error marks a bad prefix
                running = [self.index[p] for p in recorder.stack if p in self.index]
                verdict.update(outcome="bad", why=f"{type(exc).__name__}: "
                               f"{first_line(str(exc), 160)}",
                               bad_at=running[-1] if running else len(seen))
        verdict["ran"] = len(seen)
        return verdict


def leaf_order(ctx: ProbeContext) -> tuple[list[str], dict[str, Any]]:
    """Leaf modules in the order the forward runs them, and how that full run ended.

    When the error escapes while a parent, not a leaf, is the innermost module
    running, it was raised by the parent's own code between its children (a
    ``view`` after a ``permute``): ``outcome["glue"]`` says where, and no leaf
    is to blame.
    """
    order: list[str] = []
    leaves = {path for path, m in ctx.model.named_modules() if is_leaf(m)}

    def note(path: str, module: nn.Module, args: tuple, output: Any) -> None:
        if path in leaves and path not in order:
            order.append(path)

    recorder = ModuleRecorder(ctx.model, ring=256, on_output=note)
    ops = OpRecorder(ring=1)
    outcome: dict[str, Any] = {"error": None, "glue": None}
    with preserved(ctx.model, parameters=False), torch.no_grad():
        try:
            with recorder, ops:
                ctx.forward()
        except Exception as exc:  # noqa: BLE001 - the failure being bisected
            outcome["error"] = f"{type(exc).__name__}: {first_line(str(exc), 160)}"
            running = [p for p in recorder.stack if p in leaves]
            if running:
                if running[-1] not in order:
                    order.append(running[-1])
            elif recorder.stack:
                outcome["glue"] = _glue(ctx.model, recorder, ops, exc)
    return order, outcome


def _glue(model: nn.Module, recorder: ModuleRecorder, ops: OpRecorder,
          exc: BaseException) -> dict[str, Any]:
    """Where in a parent's own forward the error was raised, and between which children."""
    parent_path = recorder.stack[-1]
    parent = model.get_submodule(parent_path) if parent_path else model
    children = [name for name, _ in parent.named_children()]
    prefix = f"{parent_path}." if parent_path else ""
    ran = [path[len(prefix):] for path in recorder.order
           if path.startswith(prefix) and path[len(prefix):] in children]
    before = ran[-1] if ran else None
    later = children[children.index(before) + 1:] if before in children else children
    after = next((name for name in later if name not in ran), None)
    failure = ops.failure or {}
    where = failure.get("where") or exception_location(exc) or {}
    return {
        "parent": readable_name(model, parent_path),
        "parent_path": parent_path,
        "parent_label": short_label(parent),
        "file": where.get("file"), "line": where.get("line"), "code": where.get("code"),
        "op": failure.get("op"),
        "before": readable_name(model, prefix + before) if before else None,
        "after": readable_name(model, prefix + after) if after else None,
        "input_shapes": [t["shape"] for t in failure.get("inputs") or []],
    }


def _glue_result(glue: dict[str, Any], why: str, facts: dict[str, Any]) -> dict:
    facts["glue"] = glue
    between = " and ".join(filter(None, (
        f"after {glue['before']}" if glue["before"] else "before its first child",
        f"before {glue['after']}" if glue["after"] else None)))
    at = f" at {file_name(glue['file'])}:{glue['line']}" if glue.get("file") else ""
    code = f" ({glue['code'].strip()})" if glue.get("code") else ""
    got = (f"; {glue['op'] or 'the op'} received {glue['input_shapes'][0]}"
           if glue["input_shapes"] else "")
    summary = (f"no child module is to blame: {glue['parent']}'s own forward raised {why}"
               f"{at}{code}, {between}{got}")
    return result("fail", summary, facts, {"module": glue["parent"], "op": glue["op"],
                                           "file": glue["file"], "line": glue["line"]})


def bisect_modules(ctx: ProbeContext, lo: int, hi: int) -> dict:
    order, first = leaf_order(ctx)
    n = len(order)
    facts: dict[str, Any] = {"over": "modules", "first_bad": None, "runs": 1, "steps": [],
                             "order": order, "n": n, "max_runs": _budget(n), "glue": None}
    if first["glue"] is not None:
        return _glue_result(first["glue"], first["error"], facts)
    if n == 0:
        return result("inconclusive", "the model has no leaf modules that ran", facts)
    run = PrefixRun(ctx, order)
    whole = run(None)
    facts["runs"] = 1 + run.runs
    if whole["outcome"] == "good":
        return result("pass", f"all {n} leaf modules ran with finite outputs"
                      + (f" (but: {first['error']})" if first["error"] else ""), facts)
    lo = max(0, lo)
    hi = n - 1 if hi < 0 or hi >= n else hi
    steps = []
    while lo < hi:
        cut = (lo + hi) // 2
        verdict = run(cut)
        bad = verdict["outcome"] == "bad" and verdict["bad_at"] is not None \
            and verdict["bad_at"] <= cut
        steps.append({"lo": lo, "hi": hi, "cut": cut, "cut_module": order[cut],
                      "ran": verdict["ran"], "outcome": "bad" if bad else "good",
                      "why": verdict["why"] if bad else None})
        if bad:
            hi = cut
        else:
            lo = cut + 1
    facts["runs"] = 1 + run.runs
    facts["steps"] = steps
    path = order[lo]
    module = ctx.model.get_submodule(path)
    name = readable_name(ctx.model, path)
    facts["first_bad"] = {"index": lo, "module": name, "path": path,
                          "type": type(module).__name__, "label": module_label(module),
                          "why": whole["why"]}
    summary = (f"first bad leaf: {name} ({module_label(module)}), #{lo + 1} of {n}: "
               f"{whole['why']} — {facts['runs']} runs")
    return result("fail", summary, facts, {"module": name, "op": None, "file": None,
                                           "line": None})


def _budget(n: int) -> int:
    return math.ceil(math.log2(n)) + 2 if n > 1 else 2


def _bad_state(model: nn.Module, loss: Any) -> dict[str, Any] | None:
    if isinstance(loss, torch.Tensor) and not all_finite(loss.detach()):
        return {"what": "loss", "name": None, "loss": str(float(loss.detach()))}
    for name, param in model.named_parameters():
        if not all_finite(param.detach()):
            return {"what": "param", "name": name}
        if param.grad is not None and not all_finite(param.grad):
            return {"what": "grad", "name": name}
    return None


class _Snapshot:
    """Model, optimizer and RNG state at one step, to replay training from there."""

    def __init__(self, ctx: ProbeContext, step: int):
        self.step = step
        self.model = copy.deepcopy(ctx.model.state_dict())
        self.optimizer = copy.deepcopy(ctx.optimizer.state_dict()) if ctx.optimizer else None
        self.rng = torch.get_rng_state()

    def restore(self, ctx: ProbeContext) -> None:
        ctx.model.load_state_dict(self.model)
        if self.optimizer is not None:
            ctx.optimizer.load_state_dict(self.optimizer)
        torch.set_rng_state(self.rng)


def bisect_steps(ctx: ProbeContext, total: int) -> dict:
    facts: dict[str, Any] = {"over": "steps", "first_bad": None, "runs": 0, "steps": [],
                             "n": total, "glue": None}
    if ctx.optimizer is None and ctx.train_step is None:
        return result("inconclusive", "bisecting steps needs an optimizer or a train_step",
                      facts)
    interval = max(1, math.ceil(math.sqrt(total)))
    facts["checkpoint_every"] = interval
    facts["max_runs"] = 1 + math.ceil(math.log2(interval)) if interval > 1 else 1
    with preserved(ctx.model, ctx.optimizer, parameters=True):
        good = _Snapshot(ctx, 0)
        bad_step, bad_what = None, None
        facts["runs"] = 1
        step = 0
        while step < total and bad_step is None:
            loss = ctx.step()
            step += 1
            if step % interval == 0 or step == total:
                bad_what = _bad_state(ctx.model, loss)
                if bad_what is None:
                    good = _Snapshot(ctx, step)
                else:
                    bad_step = step
        if bad_step is None:
            return result("pass", f"{total} training steps kept loss and parameters finite",
                          facts)
        lo, hi = good.step + 1, bad_step  # the first bad step lies in [lo, hi]
        while lo < hi:
            cut = (lo + hi) // 2
            good.restore(ctx)
            loss = None
            for _ in range(cut - good.step):
                loss = ctx.step()
            facts["runs"] += 1
            what = _bad_state(ctx.model, loss)
            facts["steps"].append({"lo": lo, "hi": hi, "cut": cut, "ran": cut - good.step,
                                   "outcome": "bad" if what else "good"})
            if what:
                hi, bad_what = cut, what
            else:
                lo = cut + 1
    facts["first_bad"] = {"step": lo, **bad_what}
    name = f" ({bad_what['name']})" if bad_what.get("name") else ""
    summary = (f"training turns non-finite at step {lo}: first the {bad_what['what']}{name} "
               f"— {facts['runs']} runs")
    return result("fail", summary, facts)


@probe("bisect")
@never_raises
def bisect(ctx: ProbeContext, over: str = "modules", steps: int = 64, lo: int = 0,
           hi: int = -1) -> dict:
    if ctx.model is None:
        return result("inconclusive", "no model to bisect",
                      {"first_bad": None, "runs": 0, "steps": [], "glue": None})
    if over == "steps":
        return bisect_steps(ctx, max(1, int(steps)))
    if over != "modules":
        return result("error", f"unknown bisect target {over!r}: use 'modules' or 'steps'",
                      {"first_bad": None, "runs": 0, "steps": [], "glue": None})
    return bisect_modules(ctx, int(lo), int(hi))
