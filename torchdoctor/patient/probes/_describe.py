"""Tensors as JSON: described (shape, dtype, device, a few statistics), never sent.

Probe results cross a process boundary as JSON and may concern models with
gigabytes of activations, so a fact about a tensor is a small description
of it, with its statistics reduced on the tensor's own device.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def shape(t: torch.Tensor) -> list[int]:
    return [int(s) for s in t.shape]


def tensor_stats(t: torch.Tensor) -> dict[str, Any]:
    """min/max/mean of the finite values and the NaN/Inf counts: a NaN hides the rest."""
    with torch.no_grad():
        if t.numel() == 0 or t.is_complex() or t.layout != torch.strided:
            return {}
        if t.dtype == torch.bool:
            return {"true": int(t.sum())}
        if not t.is_floating_point():
            return {"min": int(t.min()), "max": int(t.max())}
        finite = torch.isfinite(t)
        nan = int(torch.isnan(t).sum())
        inf = int(t.numel() - int(finite.sum()) - nan)
        stats: dict[str, Any] = {"nan": nan, "inf": inf}
        if nan + inf < t.numel():
            values = t[finite] if nan + inf else t
            values = values.float()
            stats.update(min=_num(values.min()), max=_num(values.max()),
                         mean=_num(values.mean()))
        return stats


def _num(value: torch.Tensor) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def describe_tensor(t: torch.Tensor, stats: bool = False) -> dict[str, Any]:
    described: dict[str, Any] = {
        "shape": shape(t),
        "dtype": str(t.dtype),
        "device": str(t.device),
        "requires_grad": bool(t.requires_grad),
    }
    if stats:
        described["stats"] = tensor_stats(t)
    return described


def describe(obj: Any, stats: bool = False, depth: int = 0) -> Any:
    """Tensors nested in tuples, lists and dicts, described in place; a batch keeps its form."""
    if isinstance(obj, torch.Tensor):
        return describe_tensor(obj, stats)
    if depth > 4:
        return json_safe(obj)
    if isinstance(obj, dict):
        return {str(k): describe(v, stats, depth + 1) for k, v in list(obj.items())[:32]}
    if isinstance(obj, (tuple, list)):
        return [describe(v, stats, depth + 1) for v in obj[:32]]
    return json_safe(obj)


def json_safe(obj: Any, depth: int = 0) -> Any:
    """Anything a probe might put in its facts, made JSON-serialisable."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, torch.Tensor):
        if obj.numel() == 1 and obj.layout == torch.strided:
            return json_safe(obj.item())
        return describe_tensor(obj)
    if isinstance(obj, (torch.dtype, torch.device)):
        return str(obj)
    if isinstance(obj, torch.Size):
        return [int(s) for s in obj]
    if depth > 6:
        return repr(obj)[:200]
    if isinstance(obj, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (tuple, list, set, frozenset)):
        return [json_safe(v, depth + 1) for v in obj]
    return repr(obj)[:200]
