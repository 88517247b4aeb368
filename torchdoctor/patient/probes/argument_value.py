"""The ``argument_value`` probe: what a torch op got instead of a tensor, and from where.

"cross_entropy_loss(): argument 'input' (position 1) must be Tensor, not
InceptionOutputs" names the argument and the type, not the value's origin.
The failing frames hold the value (the innermost frame with a local of that
argument's name) and the user's frame holds it under a name; the line that
last bound that name says where it came from. A tuple of tensors bound from
a module call is a model that returns several outputs (an RNN's
``(output, state)``, Inception's ``(logits, aux_logits)``), to be unpacked
where it is bound; an array, list or number bound otherwise is data that was
never converted.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, frames
from torchdoctor.patient.probes._frames import USER, file_kind, frame_info
from torchdoctor.patient.probes._statements import (
    MISSING,
    assigned_before,
    lookup,
    statement_at,
)

PROBE_FACTS = ("argument", "value_type", "is_container", "holds_tensors", "held_as",
               "from_module_call", "bound_at")
_ARGUMENT = re.compile(r"argument '(\w+)'")


@probe("argument_value")
@never_raises
def argument_value(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    named = _ARGUMENT.search(str(exc)) if exc is not None else None
    if named is None:
        return result("inconclusive", "the failure names no argument of a torch op", facts)
    facts["argument"] = named.group(1)
    found = _value(exc, facts["argument"])
    if found is None:
        return result("inconclusive", f"no frame of the failure holds {facts['argument']!r}"
                      " as something other than a tensor", facts)
    value, bound = found
    items = list(value.values()) if isinstance(value, dict) else value
    facts.update(value_type=type(value).__name__,
                 is_container=isinstance(value, (tuple, list, dict)))
    facts["holds_tensors"] = facts["is_container"] and any(
        isinstance(item, torch.Tensor) for item in items)
    sites: dict[str, Any] = {}
    if bound is not None:
        name, frame, line = bound
        facts["held_as"] = name
        site = frame_info(frame.f_code.co_filename, line,
                          getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
        site["module"] = None
        facts["bound_at"] = site
        statement = statement_at(frame.f_code.co_filename, line)
        facts["from_module_call"] = isinstance(getattr(statement, "value", None), ast.Call) \
            and isinstance(lookup(statement.value.func, frame), nn.Module)
        sites = {"fix_at": site}
    return {**result("fail", _summary(facts), facts), **sites}


def _value(exc: BaseException, argument: str) -> tuple[Any, tuple | None] | None:
    """The refused value, and (name, frame, line of its binding) in the innermost user
    frame that holds it under a name."""
    value: Any = MISSING
    for frame, line in frames(exc):
        if value is MISSING:
            candidate = frame.f_locals.get(argument, MISSING)
            if candidate is not MISSING and not isinstance(candidate, torch.Tensor):
                value = candidate
            continue
        if file_kind(frame.f_code.co_filename) != USER:
            continue
        for name, local in list(frame.f_locals.items()):
            if local is value:
                bound = assigned_before(frame.f_code.co_filename, name, line)
                return value, ((name, frame, bound) if bound else None)
    return None if value is MISSING else (value, None)


def _summary(facts: dict[str, Any]) -> str:
    what = f"{facts['argument']} was a {facts['value_type']}"
    if facts["holds_tensors"]:
        what += " of tensors"
    if facts["bound_at"]:
        source = "a module call" if facts["from_module_call"] else "this line"
        what += (f", bound to {facts['held_as']} at line {facts['bound_at']['line']}"
                 f" `{facts['bound_at']['code']}` by {source}")
    return what
