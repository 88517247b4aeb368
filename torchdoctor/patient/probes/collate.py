"""The ``collate_items`` probe: which samples of the failing batch do not stack, and how.

The default collate stacks each field of the samples into one tensor, so a
single sample of another size fails the whole batch with only two sizes in
the message. The failure's frames hold the samples and their dataset
indices (or, when workers hid them, the loader and the indices it drew);
every sample is measured, field by field, against the size most share.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import Counter
from typing import Any

import torch
from torch.utils.data import DataLoader

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import first_line, never_raises
from torchdoctor.patient.probes._failing_frames import (
    failing_exception,
    find_local,
    innermost_user_site,
)
from torchdoctor.patient.probes._frames import USER, file_kind, frame_info

PROBE_FACTS = ("found_from", "dataset", "dataset_len", "batch_size", "indices", "fields",
               "item_sizes", "differing", "common_size", "field", "field_rank",
               "differing_dims", "ragged", "error_type", "error_message")
_MAX_ITEMS = 256


@probe("collate_items")
@never_raises
def collate_items(ctx: ProbeContext | None) -> dict:
    facts: dict[str, Any] = dict.fromkeys(PROBE_FACTS)
    exc = failing_exception(ctx)
    if exc is not None:
        facts.update(error_type=type(exc).__name__, error_message=first_line(str(exc), 500))
    answer = _measured(ctx, exc, facts)
    raised = innermost_user_site(exc)
    answer["raised_at"] = ({**{k: raised[k] for k in ("file", "line", "code")}, "module": None}
                           if raised else None)
    # Images of different sizes are fixed where the dataset makes them (resize, crop,
    # convert to RGB); sequences of different lengths are padded in a collate_fn, at the
    # loader, whose line the frames do not hold: no fix site is claimed for them.
    sequences = (facts["differing_dims"] == [0] and (facts["field_rank"] or 0) <= 2)
    answer["fix_at"] = (_sample_made_at(ctx, exc, facts["field"])
                        if answer["status"] == "fail" and not sequences else None)
    return answer


def _sample_made_at(ctx: ProbeContext | None, exc: BaseException | None,
                    field: str | None) -> dict | None:
    """The line of the user's ``__getitem__`` that made the field that differs: the
    assignment of the name its single ``return`` gives for that field, else that return."""
    found = find_local(exc, lambda name, value: name == "possibly_batched_index")
    fetcher = found[1].f_locals.get("self") if found is not None else None
    dataset = getattr(fetcher, "dataset", None)
    if dataset is None:
        loader = _loader(exc, ctx)
        dataset = loader.dataset if loader is not None else None
    getitem = getattr(type(dataset), "__getitem__", None)
    code = getattr(getitem, "__code__", None)
    if code is None or file_kind(code.co_filename) != USER:
        return None
    try:
        lines, first = inspect.getsourcelines(getitem)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    returns = [node for node in ast.walk(tree) if isinstance(node, ast.Return)]
    if len(returns) != 1:
        return None
    line = first + _made_line(tree, returns[0], field) - 1
    info = frame_info(code.co_filename, line, getattr(code, "co_qualname", code.co_name))
    return {"file": info["file"], "line": line, "code": info["code"], "module": None}


def _measured(ctx: ProbeContext | None, exc: BaseException | None,
              facts: dict[str, Any]) -> dict:
    samples, indices, dataset, origin = _failing_samples(exc, ctx)
    if samples is None:
        return result("inconclusive", "no batch to measure: the failure's frames hold no"
                      " collate call, and no DataLoader was found", facts)
    facts.update(found_from=origin, dataset=type(dataset).__name__ if dataset is not None
                 else None, dataset_len=_len(dataset), batch_size=len(samples),
                 indices=list(indices) if indices is not None else None)
    sizes = [_sizes(sample) for sample in samples[:_MAX_ITEMS]]
    facts["item_sizes"] = sizes
    fields = sorted({key for size in sizes for key in size}, key=str)
    facts["fields"] = [str(key) for key in fields]
    for key in fields:
        values = [size.get(key) for size in sizes]
        common, _ = Counter(map(_hashable, values)).most_common(1)[0]
        differing = [{"position": position, "index": _at(indices, position), "size": value}
                     for position, value in enumerate(values) if _hashable(value) != common]
        if differing:
            facts.update(field=str(key), common_size=_unhashable(common),
                         differing=differing, ragged=True,
                         field_rank=len(common) if isinstance(common, tuple) else None,
                         differing_dims=_differing_dims(common, differing))
            listed = ", ".join(f"index {d['index']} has {d['size']}" for d in differing[:4])
            return result("fail", f"{len(differing)} of {len(values)} samples of the failing"
                          f" batch differ in field {key} from the {_unhashable(common)} most"
                          f" have: {listed}", facts)
    facts["ragged"] = False
    return result("pass", f"all {len(samples)} samples of the batch have the same sizes in"
                  " every field", facts)


def _failing_samples(exc: BaseException | None, ctx: ProbeContext | None
                     ) -> tuple[list | None, list | None, Any, str | None]:
    """The samples as the fetcher gave them to collate, with their indices and dataset."""
    found = find_local(exc, lambda name, value: name == "possibly_batched_index")
    if found is not None:
        indices, frame, _ = found
        fetcher = frame.f_locals.get("self")
        data = frame.f_locals.get("data")
        dataset = getattr(fetcher, "dataset", None)
        if isinstance(data, list):
            return data, _index_list(indices), dataset, "failing_frames"
        if dataset is not None:
            indices = _index_list(indices)
            return [dataset[i] for i in indices], indices, dataset, "failing_frames"
    loader = _loader(exc, ctx)
    if loader is None or loader.batch_sampler is None:
        return None, None, None, None
    indices = next(iter(loader.batch_sampler))
    indices = _index_list(indices)
    return [loader.dataset[i] for i in indices], indices, loader.dataset, "loader_first_batch"


def _made_line(tree: ast.AST, returned: ast.Return, field: str | None) -> int:
    """Where the returned field's value was assigned, when it is returned by name."""
    value = returned.value
    key = (field or "").split(".")[0]
    if isinstance(value, ast.Dict):
        value = next((v for k, v in zip(value.keys, value.values)
                      if isinstance(k, ast.Constant) and str(k.value) == key), None)
    elif isinstance(value, (ast.Tuple, ast.List)) and key.isdigit():
        value = value.elts[int(key)] if int(key) < len(value.elts) else None
    if not isinstance(value, ast.Name):
        return returned.lineno
    assigned = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and node.lineno < returned.lineno
                and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)]
    return max(assigned) if assigned else returned.lineno


def _loader(exc: BaseException | None, ctx: ProbeContext | None) -> DataLoader | None:
    found = find_local(exc, lambda name, value: isinstance(value, DataLoader))
    if found is not None:
        return found[0]
    return ctx.loader if ctx is not None and isinstance(ctx.loader, DataLoader) else None


def _index_list(indices: Any) -> list:
    if isinstance(indices, (list, tuple)):
        return [int(i) if isinstance(i, int) else i for i in indices]
    return [indices]


def _at(indices: list | None, position: int) -> Any:
    return indices[position] if indices is not None and position < len(indices) else position


def _len(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except Exception:  # noqa: BLE001 - an iterable dataset has no length
        return None


def _sizes(sample: Any, prefix: str = "") -> dict[str, Any]:
    """Field → size: ``{"0": [12], "1": "int"}`` for a (tensor, label) sample."""
    if isinstance(sample, torch.Tensor) or hasattr(sample, "shape"):
        return {prefix or "sample": [int(d) for d in sample.shape]}
    if isinstance(sample, (tuple, list)):
        out: dict[str, Any] = {}
        for i, item in enumerate(sample):
            out.update(_sizes(item, f"{prefix}{i}" if not prefix else f"{prefix}.{i}"))
        return out
    if isinstance(sample, dict):
        out = {}
        for key, item in sample.items():
            out.update(_sizes(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(sample, (str, bytes)):
        return {prefix or "sample": f"{type(sample).__name__} of length {len(sample)}"}
    return {prefix or "sample": type(sample).__name__}


def _differing_dims(common: Any, differing: list[dict]) -> list[int]:
    """The dimensions in which samples differ from the common size (all, when ranks differ):
    a length (sequences), a height or width (images), channels (grayscale beside RGB)."""
    if not isinstance(common, tuple):
        return []
    dims: set[int] = set()
    for entry in differing:
        size = entry["size"]
        if not isinstance(size, list) or len(size) != len(common):
            return list(range(len(common)))
        dims.update(i for i, (a, b) in enumerate(zip(size, common)) if a != b)
    return sorted(dims)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _unhashable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
