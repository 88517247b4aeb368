"""The ``first_nonfinite`` probe: the first module or op whose output turns NaN/Inf.

One forward pass with hooks that keep a finite/non-finite bit per output and
full statistics only for the culprit, so it costs about one forward and holds
no extra activations. A module whose inputs were already non-finite only
passed the NaN on; the one with finite inputs and non-finite output made it.
Functional ops called between modules (``torch.log(x)`` in a parent's
forward, or in a hand-written loss) are checked through the op recorder.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._describe import describe, tensor_stats
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._frames import file_name, user_frame
from torchdoctor.patient.probes._harness import can_run_loss
from torchdoctor.patient.probes._modules import is_leaf, module_label
from torchdoctor.patient.probes._tensors import all_finite_in, iter_tensors
from torchdoctor.patient.probes.trace import ModuleRecorder, OpRecorder


class _FoundNonFinite(Exception):
    """Raised from a hook to stop the forward at the first non-finite output."""


def _stats(obj: Any) -> list[dict[str, Any]]:
    return [{"shape": list(t.shape), **tensor_stats(t)} for t in iter_tensors(obj)][:4]


class NonFiniteWatch:
    """Module and op callbacks that record the first non-finite output, then stop the run."""

    def __init__(self, model: nn.Module):
        self.found: dict[str, Any] | None = None
        self.modules = ModuleRecorder(model, ring=8, on_output=self.module_output)
        self.ops = OpRecorder(ring=8, on_op=self.op_output)
        self.phase = "forward"
        self.checked = 0

    def module_output(self, path: str, module: nn.Module, args: tuple, output: Any) -> None:
        self.checked += 1
        if self.found is not None or all_finite_in(output):
            return
        produced = all_finite_in(args)
        self.found = {
            "kind": "module", "module": path, "module_type": type(module).__name__,
            "module_label": module_label(module), "op": None, "produced": produced,
            "input_finite": produced, "stats": _stats(output), "input_stats": _stats(args),
            "where": user_frame(3),  # over this hook and ModuleRecorder's, to torch's call
        }
        raise _FoundNonFinite

    def op_output(self, name: str, args: tuple, kwargs: dict, out: Any,
                  where: dict | None) -> None:
        top = self.modules.stack[-1] if self.modules.stack else None
        if top is not None and is_leaf(self.modules.model.get_submodule(top)):
            return  # the leaf module's own output hook will look at it
        self.checked += 1
        if self.found is not None or all_finite_in(out):
            return
        produced = all_finite_in((args, kwargs))
        self.found = {
            "kind": "op", "module": top, "module_type": None, "module_label": None, "op": name,
            "produced": produced, "input_finite": produced, "stats": _stats(out),
            "input_stats": _stats((args, kwargs)), "where": where,
        }
        raise _FoundNonFinite


@probe("first_nonfinite")
@never_raises
def first_nonfinite(ctx: ProbeContext) -> dict:
    facts: dict[str, Any] = {"found": False, "module": None, "produced": None,
                             "input_finite": None, "stats": None, "op": None, "phase": None,
                             "batch_finite": all_finite_in(ctx.batch), "error": None}
    if ctx.model is None:
        return result("inconclusive", "no model to run", facts)
    watch = NonFiniteWatch(ctx.model)
    with preserved(ctx.model, parameters=False), torch.no_grad():
        try:
            with watch.modules, watch.ops:
                output = ctx.forward()
                if can_run_loss(ctx):
                    watch.phase = "loss"
                    ctx.loss(output)
                del output
        except _FoundNonFinite:
            pass
        except Exception as exc:  # noqa: BLE001 - an unrelated user error ends the pass
            facts["error"] = f"{type(exc).__name__}: {first_line(str(exc), 200)}"
    facts["checked"] = watch.checked
    found = watch.found
    if found is None:
        status = "inconclusive" if facts["error"] else "pass"
        what = "forward and loss" if can_run_loss(ctx) else "forward"
        summary = (f"the run stopped with {facts['error']}" if facts["error"]
                   else f"every output of the {what} is finite ({watch.checked} checked)")
        return result(status, summary, facts)
    where = found.pop("where")
    facts.update(found, found=True, phase=watch.phase,
                 file=where["file"] if where else None, line=where["line"] if where else None,
                 code=where["code"] if where else None)
    if not facts["batch_finite"]:
        facts["batch"] = describe(ctx.batch, stats=True)
    name = found["op"] or found["module"]
    inside = f" in {found['module']}" if found["kind"] == "op" and found["module"] else ""
    verb = "produced" if found["produced"] else "passed on (its inputs were already non-finite)"
    counts = found["stats"][0] if found["stats"] else {}
    summary = (f"{name}{inside} {verb} non-finite values during the {watch.phase} "
               f"(nan={counts.get('nan')}, inf={counts.get('inf')})")
    if where:
        summary += f" at {file_name(where['file'])}:{where['line']} (`{where['code']}`)"
    loc = {"module": found["module"], "op": found["op"],
           "file": facts["file"], "line": facts["line"]}
    return result("fail", summary, facts, loc)
