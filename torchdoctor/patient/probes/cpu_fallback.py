"""The ``cpu_fallback`` probe: rerun the failing step where the error speaks plainly.

On CUDA an out-of-range index surfaces as "device-side assert triggered",
reported asynchronously at some later call. The doctor runs this probe in a
fresh patient started with ``CUDA_VISIBLE_DEVICES=`` and
``TORCHDOCTOR_DEVICE=cpu`` (and once with ``CUDA_LAUNCH_BLOCKING=1``), where
the same step raises the real IndexError with the offending index.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._frames import exception_location
from torchdoctor.patient.probes._harness import can_run_loss
from torchdoctor.patient.probes._tensors import first_tensor, iter_tensors, map_tensors
from torchdoctor.patient.probes.index_range import _EmbeddingInputs

_INDEX_PATTERNS = (
    re.compile(r"index (?P<index>-?\d+) is out of bounds for dimension \d+ with size (?P<size>\d+)"),
    re.compile(r"[Tt]arget (?P<index>-?\d+) is out of bounds"),
    re.compile(r"index (?P<index>-?\d+) out of range for tensor of size \[(?P<size>\d+)"),
)


def parse_index(message: str) -> tuple[int | None, int | None]:
    for pattern in _INDEX_PATTERNS:
        match = pattern.search(message)
        if match:
            size = match.groupdict().get("size")
            return int(match["index"]), int(size) if size else None
    return None, None


def on_cpu(ctx: ProbeContext) -> ProbeContext:
    """A copy of the context with model and batch on the CPU, when anything is elsewhere."""
    tensors = list(iter_tensors(ctx.batch))
    if ctx.model is not None:
        tensors += list(ctx.model.parameters())
    if all(t.device.type == "cpu" for t in tensors):
        return ctx
    model = copy.deepcopy(ctx.model).cpu() if ctx.model is not None else None
    return ProbeContext(model=model, batch=map_tensors(torch.Tensor.cpu, ctx.batch), loss_fn=ctx.loss_fn,
                        num_classes=ctx.num_classes, source=ctx.source, error=ctx.error)


@probe("cpu_fallback")
@never_raises
def cpu_fallback(ctx: ProbeContext) -> dict:
    blocking = os.environ.get("CUDA_LAUNCH_BLOCKING") == "1"
    wants_cpu = os.environ.get("TORCHDOCTOR_DEVICE") == "cpu" or not torch.cuda.is_available()
    facts: dict[str, Any] = dict.fromkeys(
        ("cpu_error_type", "cpu_error_message", "index", "size", "blocking_error_message",
         "module", "file", "line", "code"))
    facts.update(reproduced_on_cpu=False, device="cpu" if wants_cpu else "cuda",
                 launch_blocking=blocking)
    if ctx.model is None:
        return result("inconclusive", "no model to rerun", facts)
    run_ctx = on_cpu(ctx) if wants_cpu else ctx
    watcher = _EmbeddingInputs(run_ctx.model)
    output = None
    error: BaseException | None = None
    with preserved(run_ctx.model, parameters=False), watcher:
        try:
            output = run_ctx.forward()
            if can_run_loss(run_ctx):
                run_ctx.loss(output).backward()
        except Exception as exc:  # noqa: BLE001 - the rerun's error is the answer
            error = exc
    if error is None:
        summary = (f"the step ran clean on {facts['device']}: the original error does not "
                   "reproduce here")
        return result("pass", summary, facts)
    message = first_line(str(error), 1000)
    frame = exception_location(error)
    facts.update(cpu_error_type=type(error).__name__, cpu_error_message=message,
                 reproduced_on_cpu=wants_cpu)
    if frame:
        facts.update(file=frame["file"], line=frame["line"], code=frame["code"])
    if blocking:
        facts["blocking_error_message"] = message
    index, size = parse_index(message)
    if "out of range in self" in message:
        bad = next((e for e in watcher.seen if e["out_of_range"]), None)
        if bad is not None:
            index = bad["max"] if bad["max"] >= bad["vocab_size"] else bad["min"]
            size = bad["vocab_size"]
            facts.update(module=bad["embedding"], offenders=bad["offenders"])
    elif re.search(r"[Tt]arget -?\d+ is out of bounds", message) and size is None:
        logits = first_tensor(output)
        if logits is not None and logits.dim() >= 2:
            size = int(logits.shape[1])
    del output
    facts.update(index=index, size=size)
    summary = f"on {facts['device']}: {facts['cpu_error_type']}: {first_line(message, 160)}"
    if index is not None and size is not None:
        summary += f" (index {index}, valid 0..{size - 1})"
    loc = None
    if facts["module"] or frame:
        loc = {"module": facts["module"], "op": None, "file": facts["file"],
               "line": facts["line"]}
    return result("fail", summary, facts, loc)
