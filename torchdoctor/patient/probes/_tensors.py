"""Finding the tensors inside whatever a model takes or returns.

Batches, outputs and op arguments nest tensors in tuples, lists and dicts;
every probe walks them the same way, to a bounded depth so a pathological
structure cannot stall a probe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

MAX_DEPTH = 4


def iter_tensors(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth <= MAX_DEPTH and isinstance(obj, dict):
        for value in obj.values():
            yield from iter_tensors(value, depth + 1)
    elif depth <= MAX_DEPTH and isinstance(obj, (tuple, list)):
        for value in obj:
            yield from iter_tensors(value, depth + 1)


def first_tensor(obj: Any) -> torch.Tensor | None:
    return next(iter_tensors(obj), None)


def map_tensors(fn: Callable[[torch.Tensor], Any], obj: Any) -> Any:
    """The same nesting with every tensor replaced by ``fn(tensor)`` (moved, detached...)."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: map_tensors(fn, v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(map_tensors(fn, v) for v in obj)
    if isinstance(obj, list):
        return [map_tensors(fn, v) for v in obj]
    return obj


def all_finite(t: torch.Tensor) -> bool:
    """Integer and bool tensors cannot hold NaN/Inf, so they pass without a reduction."""
    if not t.is_floating_point() and not t.is_complex():
        return True
    with torch.no_grad():
        return bool(torch.isfinite(t).all())


def all_finite_in(obj: Any) -> bool:
    return all(all_finite(t) for t in iter_tensors(obj))
