"""The ``loss_inputs`` probe: what reached the loss, measured against its contract.

A loss error names one argument ("all elements of input should be between 0
and 1", "Target 7 is out of bounds", "target size … different to the input
size") but not what the other one looked like or where either was made. The
failure's frames hold both tensors at the loss call (a harness gives its
batch and model instead); ranges, dtypes and shapes are read there, and the
recording of the failing run says which line produced each.
"""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._describe import shape, tensor_stats
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._failing_frames import failing_exception, find_local
from torchdoctor.patient.probes._frames import INTERNAL, file_kind
from torchdoctor.patient.recorder.replay import recording_for
from torchdoctor.provenance import trace_back

PROBE_FACTS = ("found_from", "loss", "input_shape", "input_dtype", "input_min", "input_max",
               "target_shape", "target_dtype", "target_min", "target_max", "input_in_unit_range",
               "target_in_unit_range", "input_nonfinite", "target_nonfinite", "input_whole",
               "target_whole", "target_integer", "shapes_match", "classes",
               "target_in_class_range", "input_produced_at", "target_produced_at", "problems",
               "error_type", "error_message")
# Losses that want probabilities in [0, 1], not scores.
_PROBABILITY_LOSSES = ("binary_cross_entropy", "BCELoss")
_CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss")
_SAME_SHAPE_LOSSES = ("binary_cross_entropy", "binary_cross_entropy_with_logits", "BCELoss",
                      "BCEWithLogitsLoss", "mse_loss", "l1_loss", "smooth_l1_loss",
                      "MSELoss", "L1Loss", "SmoothL1Loss", "huber_loss", "HuberLoss")


@probe("loss_inputs")
@never_raises
def loss_inputs(ctx: ProbeContext | None, where: bool = True) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    if exc is not None:
        facts.update(error_type=type(exc).__name__, error_message=first_line(str(exc), 500))
    found = _at_the_loss_call(exc) or _from_harness(ctx)
    if found is None:
        return result("inconclusive", "no loss call in the failure's frames, and no harness"
                      " batch and loss to run one", facts)
    name, inputs, targets, origin = found
    facts.update(found_from=origin, loss=name)
    _measure(facts, "input", inputs)
    _measure(facts, "target", targets)
    facts["shapes_match"] = facts["input_shape"] == facts["target_shape"]
    facts["target_integer"] = not (targets.is_floating_point() or targets.is_complex())
    if len(facts["input_shape"]) >= 2:
        facts["classes"] = facts["input_shape"][1]
    if facts["target_integer"] and facts["classes"] and facts["target_min"] is not None:
        facts["target_in_class_range"] = (facts["target_min"] >= 0
                                          and facts["target_max"] < facts["classes"])
    sites = _where_made(ctx, facts) if where and exc is not None and ctx is not None else {}
    facts["problems"] = _broken_contract(facts)
    return {**result("fail" if facts["problems"] else "pass", _summary(facts), facts), **sites}


def _at_the_loss_call(exc: BaseException | None) -> tuple | None:
    """The innermost torch frame holding ``input`` and ``target`` tensors: the loss itself."""
    found = find_local(exc, lambda name, value: name == "target"
                       and isinstance(value, torch.Tensor))
    if found is None:
        return None
    target, frame, _ = found
    inputs = frame.f_locals.get("input")
    if not isinstance(inputs, torch.Tensor) or file_kind(frame.f_code.co_filename) != INTERNAL:
        return None
    owner = frame.f_locals.get("self")
    name = type(owner).__name__ if owner is not None else frame.f_code.co_name
    return name, inputs, target, "failing_frames"


def _from_harness(ctx: ProbeContext | None) -> tuple | None:
    if ctx is None or ctx.model is None or ctx.loss_fn is None or not isinstance(
            ctx.targets, torch.Tensor):
        return None
    with preserved(ctx.model, parameters=False), torch.no_grad():
        output = ctx.forward()
    if not isinstance(output, torch.Tensor):
        return None
    name = getattr(ctx.loss_fn, "__name__", None) or type(ctx.loss_fn).__name__
    return name, output, ctx.targets, "harness"


def _measure(facts: dict[str, Any], side: str, t: torch.Tensor) -> None:
    stats = tensor_stats(t)
    facts[f"{side}_shape"] = shape(t)
    facts[f"{side}_dtype"] = str(t.dtype).removeprefix("torch.")
    facts[f"{side}_nonfinite"] = stats.get("nan", 0) + stats.get("inf", 0)
    facts[f"{side}_whole"] = _whole(t)
    facts[f"{side}_min"] = stats.get("min")
    facts[f"{side}_max"] = stats.get("max")
    if stats.get("min") is not None:
        facts[f"{side}_in_unit_range"] = 0 <= stats["min"] and stats["max"] <= 1


def _whole(t: torch.Tensor) -> bool | None:
    """Only whole numbers: labels (0/1, -1/1, class ids), not scores or probabilities."""
    if t.numel() == 0 or t.is_complex():
        return None
    if not t.is_floating_point():
        return True
    with torch.no_grad():
        finite = t[torch.isfinite(t)]
        return bool(torch.equal(finite, finite.round())) if finite.numel() else None


def _where_made(ctx: ProbeContext, facts: dict[str, Any]) -> dict[str, Any]:
    """Which lines produced input and target, from the recording of the failing run; and
    ``raised_at``/``fix_at`` when the replay reproduced the failure at this loss call."""
    recording = recording_for(ctx)
    if not recording.get("failure") or not recording.get("reproduced"):
        return {}
    found = trace_back(recording)
    operands = found.get("operands") or []
    if len(operands) < 2 or operands[0].get("shape") != facts["input_shape"]:
        return {}
    facts["input_produced_at"] = operands[0].get("produced_at")
    facts["target_produced_at"] = operands[1].get("produced_at")
    return {"raised_at": found.get("raised_at"), "fix_at": found.get("fix_at")}


def _broken_contract(facts: dict[str, Any]) -> list[str]:
    loss, problems = facts["loss"], []
    if loss in _PROBABILITY_LOSSES and facts["input_in_unit_range"] is False:
        problems.append(f"{loss} wants probabilities, and the input runs from"
                        f" {facts['input_min']:.4g} to {facts['input_max']:.4g}: scores with no"
                        " sigmoid (or use BCEWithLogitsLoss)")
    if (loss in _PROBABILITY_LOSSES or "with_logits" in loss or "WithLogits" in loss) and (
            facts["target_in_unit_range"] is False):
        problems.append(f"the target runs from {facts['target_min']} to {facts['target_max']},"
                        " outside 0..1")
    if loss in _SAME_SHAPE_LOSSES and facts["target_integer"]:
        problems.append(f"{loss} computes with float targets, and the target is"
                        f" {facts['target_dtype']}")
    if loss in _SAME_SHAPE_LOSSES and not facts["shapes_match"]:
        problems.append(f"input {facts['input_shape']} and target {facts['target_shape']}"
                        " differ in shape")
    if loss in _CLASS_INDEX_LOSSES and facts["target_integer"] and (
            facts["target_in_class_range"] is False):
        problems.append(f"class targets run from {facts['target_min']} to"
                        f" {facts['target_max']} for {facts['classes']} classes")
    batch_shape = facts["input_shape"][:1] + facts["input_shape"][2:]
    if loss in _CLASS_INDEX_LOSSES and facts["target_integer"] and len(
            facts["input_shape"]) >= 2 and facts["target_shape"] != batch_shape:
        problems.append(f"class indices {facts['target_shape']} for scores"
                        f" {facts['input_shape']}: the target must be {batch_shape}")
    if loss in _CLASS_INDEX_LOSSES and not facts["target_integer"] and not facts[
            "shapes_match"]:
        problems.append(f"float targets {facts['target_shape']} for class scores"
                        f" {facts['input_shape']}: class indices must be integers (long)")
    return problems


def _summary(facts: dict[str, Any]) -> str:
    seen = (f"{facts['loss']} got input {facts['input_shape']} {facts['input_dtype']}"
            f" [{_fmt(facts['input_min'])}, {_fmt(facts['input_max'])}] and target"
            f" {facts['target_shape']} {facts['target_dtype']}"
            f" [{_fmt(facts['target_min'])}, {_fmt(facts['target_max'])}]")
    if facts["problems"]:
        return f"{seen}: {'; '.join(facts['problems'])}"
    return f"{seen}: within its contract"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


