"""The ``graph_carrier`` probe: the tensor NumPy refused, and the line that made it.

"Can't call numpy() on Tensor that requires grad" is raised where a value is
handed to NumPy (a metric, a log line, ``np.sum`` over a list of losses), but
the value was made earlier: the line that computed it from the model's
outputs, or that added a loss onto a running total. The failing frames say
whether the refused tensor was computed (it has a ``grad_fn``: outputs, a
loss) or is a leaf (a parameter); the recording of the failing run walks its
identity back past the failing line to the line that produced it. A value
that comes straight out of a module's forward is detached where it is
converted, so the fix stays on the failing line.
"""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, frames
from torchdoctor.patient.probes._recorded import Producers, site
from torchdoctor.patient.recorder.replay import recording_for

PROBE_FACTS = ("carrier_computed", "carrier_grad_fn", "carrier_shape", "made_at",
               "reproduced")
_CONVERSIONS = ("__array__", "numpy")
_RECORDED_CONVERSIONS = ("Tensor.__array__", "Tensor.numpy")


@probe("graph_carrier")
@never_raises
def graph_carrier(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    carrier = _refused(exc)
    if carrier is not None:
        facts.update(carrier_computed=carrier.grad_fn is not None,
                     carrier_grad_fn=type(carrier.grad_fn).__name__ if carrier.grad_fn
                     else None, carrier_shape=list(carrier.shape))
    sites = _made_at(ctx) if ctx is not None and exc is not None else {}
    if sites:
        facts["reproduced"] = True
        facts["made_at"] = sites["fix_at"]
        if facts["carrier_computed"] is None:
            facts["carrier_computed"] = sites.pop("computed")
    sites.pop("computed", None)
    if facts["carrier_computed"] is None:
        return result("inconclusive", "the tensor handed to NumPy is not in the failing"
                      " frames, and the replay did not reach the conversion", facts)
    if not facts["carrier_computed"]:
        return {**result("pass", "the tensor handed to NumPy is a leaf (a parameter or a"
                         " tensor created with requires_grad), not a computed value", facts),
                **sites}
    where = sites.get("fix_at")
    made = f", made at line {where['line']} `{where['code']}`" if where else ""
    how = f"grad_fn {facts['carrier_grad_fn']}" if facts["carrier_grad_fn"] else "recorded ops"
    summary = f"the tensor handed to NumPy was computed ({how}){made}: it still carries the graph"
    return {**result("fail", summary, facts), **sites}


def _refused(exc: BaseException | None) -> torch.Tensor | None:
    """The tensor whose conversion raised: ``self`` of the innermost conversion frame."""
    for frame, _ in frames(exc):
        value = frame.f_locals.get("self")
        if frame.f_code.co_name in _CONVERSIONS and isinstance(value, torch.Tensor):
            return value
    return None


def _made_at(ctx: ProbeContext) -> dict[str, Any]:
    """From the recording: the failing line, and the first line before it that produced
    the refused tensor (the failing line itself when it came out of a module)."""
    recording = recording_for(ctx)
    failure = recording.get("failure") or {}
    if not recording.get("reproduced") or failure.get("op") not in _RECORDED_CONVERSIONS:
        return {}
    producers = Producers(recording, failure.get("seq"))
    raised = site({**failure, "module": None})
    fix = raised
    event = producers.of((failure.get("inputs") or [{}])[0].get("id"))
    computed = event is not None
    seen: set[int] = set()
    while event is not None and event["seq"] not in seen:
        seen.add(event["seq"])
        if (event.get("file"), event.get("line")) != (failure.get("file"), failure.get("line")):
            if not event.get("module"):
                fix = site(event)
            break
        inputs = [t["id"] for t in event.get("inputs") or [] if producers.of(t["id"])]
        event = producers.of(inputs[0]) if inputs else None
    return {"raised_at": raised, "fix_at": fix, "computed": computed}
