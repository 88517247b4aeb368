"""The ``index_range`` probe: every Embedding input and class target versus its valid range.

An index past the end raises "index out of range in self" on the CPU and a
bare device-side assert on CUDA; either way the fix needs the offending value
and where it sits in the batch, which only the live tensors can tell.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import preserved
from torchdoctor.patient.probes._errors import never_raises
from torchdoctor.patient.probes._harness import classes_out
from torchdoctor.patient.probes._modules import module_paths
from torchdoctor.patient.probes._tensors import first_tensor, iter_tensors

_MAX_OFFENDERS = 8


def offenders(values: torch.Tensor, size: int) -> tuple[int, list[dict[str, Any]]]:
    """How many values fall outside [0, size), and the first few with their batch positions."""
    bad = (values < 0) | (values >= size)
    count = int(bad.sum())
    positions = bad.nonzero()[:_MAX_OFFENDERS].tolist() if count else []
    return count, [{"position": pos, "value": int(values[tuple(pos)])} for pos in positions]


def check_range(values: torch.Tensor, size: int) -> dict[str, Any]:
    count, first = offenders(values, size)
    low, high = int(values.min()), int(values.max())
    return {"min": low, "max": high, "size": size, "out_of_range": count > 0,
            "offending_count": count, "offenders": first,
            "one_based": count > 0 and high == size and low >= 1}


class _EmbeddingInputs:
    """Forward pre-hooks on every Embedding, keeping min/max/offenders of its indices."""

    def __init__(self, model: nn.Module):
        self.paths = module_paths(model)
        self.model = model
        self.seen: list[dict[str, Any]] = []
        self.handles: list[Any] = []

    def __enter__(self):
        for module in self.model.modules():
            if isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
                self.handles.append(module.register_forward_pre_hook(self._check))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self.handles:
            handle.remove()

    def _check(self, module: nn.Module, args: tuple) -> None:
        indices = first_tensor(args)
        if indices is None or indices.numel() == 0 or indices.is_floating_point():
            return
        path = self.paths.get(id(module), type(module).__name__)
        entry = {"embedding": path, "vocab_size": int(module.num_embeddings),
                 "shape": list(indices.shape), **check_range(indices, module.num_embeddings)}
        self.seen.append(entry)


def run_forward_watching_embeddings(ctx: ProbeContext) -> tuple[list[dict[str, Any]], Any, str | None]:
    """One no-grad forward; the embedding checks, the output and the forward's error if any."""
    watcher = _EmbeddingInputs(ctx.model)
    output, error = None, None
    with preserved(ctx.model, parameters=False), torch.no_grad(), watcher:
        try:
            output = ctx.forward()
        except Exception as exc:  # noqa: BLE001 - an out-of-range index raises here
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return watcher.seen, output, error


def class_count(ctx: ProbeContext, output: Any) -> int | None:
    """The classes a class-index loss would see: the output's class dim, else the harness's."""
    tensor = first_tensor(output)
    if ctx.num_classes is None and tensor is not None and tensor.dim() >= 2:
        return int(tensor.shape[1])
    return classes_out(ctx)


@probe("index_range")
@never_raises
def index_range(ctx: ProbeContext) -> dict:
    facts: dict[str, Any] = dict.fromkeys(
        ("offenders", "label_min", "label_max", "num_classes", "embedding", "vocab_size",
         "max_index", "min_index"))
    facts.update(out_of_range=False, one_based=False, embeddings=[], labels=None,
                 forward_error=None)
    if ctx.model is None:
        return result("inconclusive", "no model to check", facts)
    seen, output, facts["forward_error"] = run_forward_watching_embeddings(ctx)
    facts["embeddings"] = seen
    bad_embedding = next((e for e in seen if e["out_of_range"]), None)
    shown = bad_embedding or (seen[0] if seen else None)
    if shown is not None:
        facts.update(embedding=shown["embedding"], vocab_size=shown["vocab_size"],
                     max_index=shown["max"], min_index=shown["min"])
    target = next(iter_tensors(ctx.targets), None)
    classes = class_count(ctx, output)
    labels = None
    if target is not None and target.numel() and not target.is_floating_point() \
            and target.dtype != torch.bool and classes is not None:
        labels = check_range(target, classes)
        facts.update(labels=labels, label_min=labels["min"], label_max=labels["max"],
                     num_classes=classes)
    del output
    bad_labels = labels if labels and labels["out_of_range"] else None
    facts["out_of_range"] = bool(bad_embedding or bad_labels)
    facts["one_based"] = bool((bad_labels or {}).get("one_based")
                              or (bad_embedding or {}).get("one_based"))
    facts["offenders"] = (bad_embedding or bad_labels or {}).get("offenders", [])
    parts = []
    if bad_embedding:
        parts.append(f"{bad_embedding['embedding']} (Embedding with {bad_embedding['vocab_size']}"
                     f" rows) gets indices {bad_embedding['min']}..{bad_embedding['max']}; "
                     f"{bad_embedding['offending_count']} out of range, first at "
                     f"{bad_embedding['offenders'][0]['position']}")
    if bad_labels:
        hint = " (labels look 1-based)" if bad_labels["one_based"] else ""
        parts.append(f"targets span {bad_labels['min']}..{bad_labels['max']} but there are "
                     f"{classes} classes (valid 0..{classes - 1}){hint}; "
                     f"{bad_labels['offending_count']} out of range")
    if parts:
        location = ({"module": bad_embedding["embedding"], "op": "F.embedding",
                     "file": None, "line": None} if bad_embedding else None)
        return result("fail", "; ".join(parts), facts, location)
    if not seen and labels is None:
        return result("inconclusive", "no Embedding input or class-index target to check", facts)
    checked = [f"{e['embedding']} {e['min']}..{e['max']} < {e['vocab_size']}" for e in seen]
    if labels:
        checked.append(f"targets {labels['min']}..{labels['max']} < {classes}")
    return result("pass", "all indices in range: " + ", ".join(checked), facts)
