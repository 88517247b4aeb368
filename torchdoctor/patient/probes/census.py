"""The ``census`` probe: what every tensor in the setup is, grouped so the odd one stands out.

Most "expected all tensors to be on the same device" and "expected scalar type"
errors are visible at a glance once parameters are grouped by dtype, device
and trainability and only the exceptions are listed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.devices import mps_available, requested_device
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._util import (
    classes_out,
    describe,
    first_line,
    iter_tensors,
    never_raises,
    preserved,
)

_CLASS_INDEX_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)


def group_tensors(named: list[tuple[str, torch.Tensor]], grad: bool) -> dict[str, Any]:
    """"52 parameters: float32 on cpu, all trainable", with the names that differ."""
    def key(t: torch.Tensor) -> tuple:
        return (str(t.dtype).replace("torch.", ""), str(t.device),
                bool(t.requires_grad) if grad else None)

    counts = Counter(key(t) for _, t in named)
    groups = [
        {"dtype": k[0], "device": k[1], "trainable": k[2], "count": n,
         "elements": sum(t.numel() for _, t in named if key(t) == k)}
        for k, n in counts.most_common()
    ]
    exceptions = []
    if len(groups) > 1:
        common = counts.most_common(1)[0][0]
        exceptions = [{"name": name, "dtype": str(t.dtype), "device": str(t.device),
                       "requires_grad": bool(t.requires_grad)}
                      for name, t in named if key(t) != common][:20]
    return {"count": len(named), "groups": groups, "exceptions": exceptions,
            "text": _group_text(len(named), groups, grad)}


def _group_text(count: int, groups: list[dict[str, Any]], grad: bool) -> str:
    if not groups:
        return "none"
    parts = []
    for g in groups:
        trainable = "" if not grad else (", trainable" if g["trainable"] else ", frozen")
        parts.append(f"{g['count']} {g['dtype']} on {g['device']}{trainable}")
    if len(groups) == 1:
        only = groups[0]
        trainable = "" if not grad else (", all trainable" if only["trainable"] else ", all frozen")
        return f"{count}: {only['dtype']} on {only['device']}{trainable}"
    return f"{count}: " + "; ".join(parts)


def class_index_loss(loss_fn: Any) -> bool:
    if isinstance(loss_fn, _CLASS_INDEX_LOSSES):
        return True
    name = getattr(loss_fn, "__name__", "") or type(loss_fn).__name__
    return name in ("cross_entropy", "nll_loss")


def output_classes(ctx: ProbeContext, last_linear: int | None = None
                   ) -> tuple[int | None, str | None]:
    """The class dimension of one no-grad forward, when the forward runs at all.

    ``last_linear`` (the width of the model's last Linear) is the head's width
    when the output carries it; a model whose logits are made after its last
    Linear (a similarity matrix of two embeddings, a pooled attention map) emits
    as many classes as its output's class dimension says, whatever its layers are.
    """
    try:
        with preserved(ctx.model, parameters=False), torch.no_grad():
            output = ctx.forward()
    except Exception as exc:  # noqa: BLE001 - the user's forward failing is a fact
        return last_linear, f"{type(exc).__name__}: {first_line(str(exc), 160)}"
    tensor = next(iter_tensors(output), None)
    if tensor is None or tensor.dim() == 0:
        return last_linear, None
    if last_linear is not None and last_linear in tuple(tensor.shape[1:]):
        return last_linear, None
    return int(tensor.shape[1] if tensor.dim() >= 2 else tensor.shape[-1]), None


@probe("census")
@never_raises
def census(ctx: ProbeContext) -> dict:
    model = ctx.model
    inputs, targets = ctx.inputs, ctx.targets
    params = list(model.named_parameters()) if model is not None else []
    buffers = list(model.named_buffers()) if model is not None else []
    facts: dict[str, Any] = {
        "inputs": describe(inputs, stats=True),
        "targets": describe(targets, stats=True),
        "parameters": group_tensors(params, grad=True),
        "buffers": group_tensors(buffers, grad=False),
        "params_count": len(params),
        "frozen_count": sum(1 for _, p in params if not p.requires_grad),
        "training": model.training if model is not None else None,
        "mode_disagrees": [name for name, m in model.named_modules()
                           if m.training != model.training][:20] if model is not None else [],
        "loss_fn": type(ctx.loss_fn).__name__ if ctx.loss_fn is not None else None,
    }
    target = next(iter_tensors(targets), None)
    facts.update(target_dtype=str(target.dtype) if target is not None else None,
                 target_min=None, target_max=None)
    if target is not None and target.numel() and not target.is_complex():
        with torch.no_grad():
            low, high = target.min().item(), target.max().item()
        facts.update(target_min=low, target_max=high)
    facts["target_whole"] = whole_numbers(target)
    classes, forward_error = classes_out(ctx), None
    if ctx.num_classes is None and model is not None and ctx.error is None:
        classes, forward_error = output_classes(ctx, classes)
    facts["classes_out"] = classes
    facts["forward_error"] = forward_error
    integer_target = target is not None and not target.is_floating_point() \
        and target.dtype != torch.bool
    facts["label_out_of_range"] = bool(
        integer_target and classes is not None and target.numel()
        and (facts["target_min"] < 0 or facts["target_max"] >= classes))
    _devices_and_dtypes(facts, inputs, targets, params, buffers)
    facts["accelerator_unused"] = accelerator_unused(facts["devices"], _accelerator())
    facts["unregistered_modules"] = unregistered_modules(model)
    facts["unregistered_count"] = len(facts["unregistered_modules"])
    facts["first_conv"] = first_conv(model)
    # Only a forward that fails can blame the channels: a model that transposes its input
    # before the first conv (text through Conv1d) runs fine and must raise no alarm.
    forward_failed = ctx.error is not None or forward_error is not None
    mismatch = _input_channels_mismatch(facts) if forward_failed else None
    problems, oddities, flagged = _judge(ctx, facts, target, mismatch)
    facts["problems"], facts["oddities"] = problems, oddities
    facts["flagged"] = sorted(flagged)
    status = "fail" if problems else "warn" if oddities else "pass"
    head = f"parameters {facts['parameters']['text']}; {'train' if facts['training'] else 'eval'}"
    head += " mode" if model is not None else ""
    summary = "; ".join(problems or oddities) if (problems or oddities) else head
    return result(status, summary, facts, {"module": mismatch[1]["module"]} if mismatch else None)


def first_conv(model: nn.Module | None) -> dict[str, Any] | None:
    """The first convolution in the model's order: the layer that reads the data's channels."""
    if model is None:
        return None
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.conv._ConvNd):
            return {"module": name, "type": type(module).__name__,
                    "in_channels": module.in_channels, "dims": len(module.kernel_size)}
    return None


def _input_channels_mismatch(facts: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """(the inputs' channels, the first conv) when the two disagree, else None."""
    conv, shape = facts.get("first_conv"), (facts.get("inputs") or {}).get("shape")
    if not conv or not isinstance(shape, list) or len(shape) != conv["dims"] + 2:
        return None
    return (shape[1], conv) if shape[1] != conv["in_channels"] else None


def _accelerator() -> str | None:
    """The GPU this process could use, or None; none counts while the CPU fallback runs."""
    if requested_device() == "cpu":
        return None
    if torch.cuda.is_available():
        return "cuda"
    return "mps" if mps_available() else None


def accelerator_unused(devices: dict[str, list[str]], accelerator: str | None) -> bool | None:
    """Whether a GPU sits idle while the model and its batch live on the CPU.

    "Training is slow and the GPU shows 0 %" is most often a model never moved:
    ``torch.cuda.is_available()`` says True and nothing calls ``.to(device)``.
    None when there is no GPU to use, so a CPU-only machine neither confirms nor
    clears it.
    """
    if accelerator is None or not devices:
        return None
    return set(devices) == {"cpu"}


def unregistered_modules(model: nn.Module | None) -> list[str]:
    """Attributes that hold layers in a plain list, tuple or dict.

    nn.Module registers only Modules, nn.ModuleList and nn.ModuleDict; layers kept in
    a Python container are invisible to parameters(), .to(), state_dict() and, which
    nothing reports, to .eval(): their dropout keeps dropping at inference.
    """
    if model is None:
        return []
    found = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not isinstance(value, (list, tuple, dict)):
                continue
            items = value.values() if isinstance(value, dict) else value
            if any(isinstance(item, nn.Module) for item in items):
                found.append(f"{prefix}.{name}" if prefix else name)
    return found[:20]


def _devices_and_dtypes(facts: dict[str, Any], inputs: Any, targets: Any,
                        params: list, buffers: list) -> None:
    where: dict[str, set[str]] = {}
    for label, tensors in (("inputs", list(iter_tensors(inputs))),
                           ("targets", list(iter_tensors(targets))),
                           ("parameters", [t for _, t in params]),
                           ("buffers", [t for _, t in buffers])):
        for t in tensors:
            where.setdefault(str(t.device), set()).add(label)
    facts["devices"] = {device: sorted(labels) for device, labels in where.items()}
    facts["mixed_devices"] = len(where) > 1
    float_dtypes: dict[str, set[str]] = {}
    for label, tensors in (("inputs", list(iter_tensors(inputs))),
                           ("parameters", [t for _, t in params])):
        for t in tensors:
            if t.is_floating_point():
                float_dtypes.setdefault(str(t.dtype), set()).add(label)
    facts["dtypes"] = {dtype: sorted(labels) for dtype, labels in float_dtypes.items()}
    facts["mixed_dtypes"] = len(float_dtypes) > 1


def _judge(ctx: ProbeContext, facts: dict[str, Any], target: torch.Tensor | None,
           mismatch: tuple[int, dict[str, Any]] | None
           ) -> tuple[list[str], list[str], set[str]]:
    """The problems and oddities found, and the facts behind them (``flagged``): a cause
    confirmed by this census must read one of those, not merely a state it shares with
    every model ("in train mode")."""
    problems: list[str] = []
    oddities: list[str] = []
    flagged: set[str] = set()
    if facts["mixed_devices"]:
        flagged |= {"mixed_devices", "devices"}
        places = ", ".join(f"{'/'.join(v)} on {k}" for k, v in facts["devices"].items())
        problems.append(f"tensors on more than one device: {places}")
    if facts["accelerator_unused"]:
        flagged.add("accelerator_unused")
        oddities.append("a GPU is available, but the parameters and the batch are all on the CPU")
    if facts["unregistered_modules"]:
        flagged |= {"unregistered_modules", "unregistered_count"}
        held = ", ".join(facts["unregistered_modules"][:3])
        oddities.append(f"layers held in a plain Python container ({held}): parameters(), "
                        ".to() and .eval() do not reach them")
    if facts["mixed_dtypes"]:
        flagged |= {"mixed_dtypes", "dtypes", "inputs"}
        kinds = ", ".join(f"{'/'.join(v)} {k}" for k, v in facts["dtypes"].items())
        problems.append(f"floating dtypes differ: {kinds}")
    if mismatch:
        flagged |= {"first_conv", "inputs"}
        channels, conv = mismatch
        problems.append(f"the inputs carry {channels} channels in dimension 1 but the first "
                        f"convolution `{conv['module']}` ({conv['type']}) expects "
                        f"{conv['in_channels']}")
    if facts["label_out_of_range"]:
        flagged |= {"label_out_of_range", "target_min", "target_max", "classes_out"}
        problems.append(f"labels span {facts['target_min']}..{facts['target_max']} but the "
                        f"model emits {facts['classes_out']} classes (valid 0.."
                        f"{facts['classes_out'] - 1})")
    facts["target_not_class_index"] = bool(
        target is not None and class_index_loss(ctx.loss_fn) and target.is_floating_point()
        and target.dim() <= 1)
    if facts["target_not_class_index"]:
        flagged |= {"target_not_class_index", "target_dtype", "target_whole", "targets",
                    "target_min", "target_max"}
        problems.append(f"{facts['loss_fn']} needs class indices (int64) but the targets are "
                        f"{target.dtype}")
    if facts["mode_disagrees"]:
        flagged |= {"mode_disagrees", "training"}
        oddities.append(f"{len(facts['mode_disagrees'])} submodules are in "
                        f"{'eval' if facts['training'] else 'train'} mode while the model is not:"
                        f" {', '.join(facts['mode_disagrees'][:3])}")
    if facts["params_count"] and facts["frozen_count"] == facts["params_count"]:
        flagged |= {"frozen_count", "params_count"}
        oddities.append("every parameter is frozen (requires_grad=False)")
    return problems, oddities, flagged


def whole_numbers(target: torch.Tensor | None) -> bool | None:
    """Whether float targets hold only whole numbers: class ids stored as floats, not soft labels.

    ``None`` for integer targets and empty ones, where the question does not arise.
    """
    if target is None or not target.is_floating_point() or not target.numel():
        return None
    with torch.no_grad():
        finite = target[torch.isfinite(target)]
        return bool(torch.equal(finite, torch.round(finite)))
