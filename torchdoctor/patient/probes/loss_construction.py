"""The ``loss_construction`` probe: a loss class built with the tensors it should score.

``nn.CrossEntropyLoss(output, target)`` constructs a module: the output lands
in ``weight`` and the target in the legacy ``size_average`` flag, and the
first truth test of that flag raises "Boolean value of Tensor with more than
one value is ambiguous" (or a dtype or shape error from ``weight``). The
failing frames show it directly: a loss's ``__init__`` on the stack with
tensors among its arguments. The fix is the user's line that called it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.modules.loss import _Loss

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import (
    failing_exception,
    frames,
    innermost_user_site,
)

PROBE_FACTS = ("loss_class", "tensor_arguments", "constructed_with_tensors")


@probe("loss_construction")
@never_raises
def loss_construction(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    if exc is None:
        return result("inconclusive", "no captured failure to read the frames of", facts)
    built = None
    for frame, _ in frames(exc):
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "__init__" and isinstance(owner, _Loss):
            built = (owner, frame)  # the outermost __init__ holds the caller's arguments
    if built is None:
        facts["constructed_with_tensors"] = False
        return result("pass", "no loss is being constructed in the failing frames", facts)
    owner, frame = built
    arguments = frame.f_code.co_varnames[:frame.f_code.co_argcount]
    facts.update(loss_class=type(owner).__name__, tensor_arguments=[
        name for name in arguments if isinstance(frame.f_locals.get(name), torch.Tensor)])
    facts["constructed_with_tensors"] = bool(facts["tensor_arguments"])
    if not facts["constructed_with_tensors"]:
        return result("pass", f"{facts['loss_class']} is being constructed, with no tensor"
                      " among its arguments", facts)
    site = innermost_user_site(exc)
    if site is not None:
        site["module"] = None
    summary = (f"{facts['loss_class']}(...) was constructed with tensors as"
               f" {', '.join(facts['tensor_arguments'])}: the class was called where an"
               " instance should have been")
    return {**result("fail", summary, facts), "raised_at": site, "fix_at": site}
