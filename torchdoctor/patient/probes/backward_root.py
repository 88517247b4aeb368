"""The ``backward_root`` probe: what ``backward()`` was called on, and why it is not a scalar.

"grad can be implicitly created only for scalar outputs" says only that the
tensor had several elements. The failing frames hold it (``self`` of
``Tensor.backward``): its shape, and its ``grad_fn``, whose saved
``reduction`` says whether a loss function returned it unreduced
(``reduction='none'``: one loss per sample or token). The recording of the
failing run names the loss module that produced it and the line that built
it; the fix is where ``reduction`` was chosen (the keyword, or the variable
it was read from).
"""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, frames
from torchdoctor.patient.probes._frames import USER, file_kind, frame_info
from torchdoctor.patient.probes._recorded import Producers, site
from torchdoctor.patient.probes._statements import keyword_origin
from torchdoctor.patient.recorder.replay import recording_for

PROBE_FACTS = ("root_shape", "root_numel", "root_grad_fn", "reduction_none", "loss_module",
               "built_at")
_NO_REDUCTION = 0  # torch's Reduction::None, as a loss's backward node saves it


@probe("backward_root")
@never_raises
def backward_root(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    root = _root(exc)
    if root is None:
        return result("inconclusive", "no backward() call in the failing frames", facts)
    node = root.grad_fn
    facts.update(root_shape=list(root.shape), root_numel=root.numel(),
                 root_grad_fn=type(node).__name__ if node is not None else None)
    saved = getattr(node, "_saved_reduction", None) if node is not None else None
    facts["reduction_none"] = saved == _NO_REDUCTION if saved is not None else None
    sites = _sites(ctx, facts) if ctx is not None and facts["reduction_none"] else {}
    if facts["root_numel"] == 1:
        return result("pass", "backward() was called on a single value", facts)
    if facts["reduction_none"]:
        summary = (f"backward() on a {facts['root_shape']} tensor that"
                   f" {facts['loss_module'] or facts['root_grad_fn']} returned with"
                   " reduction='none': one loss per element, never reduced")
        return {**result("fail", summary, facts), **sites}
    return result("warn", f"backward() on a {facts['root_shape']} tensor made by"
                  f" {facts['root_grad_fn']}", facts)


def _root(exc: BaseException | None) -> torch.Tensor | None:
    for frame, _ in frames(exc):
        value = frame.f_locals.get("self")
        if frame.f_code.co_name == "backward" and isinstance(value, torch.Tensor):
            return value
    return None


def _sites(ctx: ProbeContext, facts: dict[str, Any]) -> dict[str, Any]:
    """The loss module that made the root, where it was built, and where its reduction
    was chosen: from the recording of the failing run."""
    recording = recording_for(ctx)
    failure = recording.get("failure") or {}
    if not recording.get("reproduced") or not failure.get("inputs"):
        return {}
    producer = Producers(recording, failure.get("seq")).of(failure["inputs"][0]["id"])
    if producer is None or not producer.get("file"):
        return {}
    label = producer.get("module_label")
    module = (recording.get("modules") or {}).get(label) if label else None
    facts["loss_module"] = module.get("type") if module else None
    built = (module or {}).get("built_at") or {"file": producer["file"],
                                               "line": producer["line"]}
    facts["built_at"] = built
    if file_kind(built["file"]) != USER:
        return {}
    line = keyword_origin(built["file"], built["line"], "reduction") or built["line"]
    fix = frame_info(built["file"], line, built.get("function") or "")
    fix["module"] = producer.get("module")
    return {"raised_at": site({**failure, "module": None}), "fix_at": fix}
