"""The DataLoader probe: hangs, pickling for worker processes, collate failures, shuffle,
workers that each repeat an iterable dataset.

A loader with workers hides its real errors behind worker wrappers or hangs
outright; drawing a few batches with ``num_workers=0`` first shows what the
dataset itself does, then the user's own settings show what the workers add.
"""

from __future__ import annotations

import multiprocessing
import pickle
import threading
import traceback
import types
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset, RandomSampler

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import describe_error
from torchdoctor.patient.probes._frames import exception_location, location
from torchdoctor.patient.probes._tensors import iter_tensors

HANG_ADVICE = ("rerun with num_workers=0 to see the real error; check shared-memory limits "
               "(/dev/shm, docker --shm-size); look for a deadlock in the dataset (locks, "
               "threads, open files shared with workers)")


def _unpicklable(obj: Any, path: str, depth: int = 0) -> tuple[str, Any] | None:
    """The attribute path of the first thing pickle refuses, searched through attributes."""
    if _pickles(obj):
        return None
    if depth < 3:
        children = obj.items() if isinstance(obj, dict) else (
            enumerate(obj) if isinstance(obj, (list, tuple)) else
            getattr(obj, "__dict__", {}).items())
        for key, value in list(children):
            child = f"{path}[{key!r}]" if isinstance(obj, (dict, list, tuple)) \
                else f"{path}.{key}"
            found = _unpicklable(value, child, depth + 1)
            if found is not None:
                return found
    return path, obj


def _pickles(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any pickling failure is what we look for
        return False
    return True


def _why(obj: Any) -> str:
    if isinstance(obj, types.LambdaType) and obj.__name__ == "<lambda>":
        return "is a lambda"
    if isinstance(obj, types.FunctionType) and "<locals>" in obj.__qualname__:
        return "is a function defined inside another function"
    return f"is a {type(obj).__name__}, which pickle cannot serialise"


def _code_site(obj: Any) -> dict | None:
    code = getattr(obj, "__code__", None)
    return {"file": code.co_filename, "line": code.co_firstlineno} if code else None


def _start_method(loader: DataLoader) -> str:
    ctx = loader.multiprocessing_context
    if isinstance(ctx, str):
        return ctx
    if ctx is not None:
        return ctx.get_start_method()
    return multiprocessing.get_start_method(allow_none=True) or "fork"


def _rebuilt(loader: DataLoader, num_workers: int, timeout: float) -> DataLoader:
    """The same loader with another worker count, sharing its dataset, sampler and collate."""
    kwargs: dict[str, Any] = {"num_workers": num_workers, "collate_fn": loader.collate_fn}
    if isinstance(loader.dataset, IterableDataset):
        # an iterable dataset batches itself: no sampler may be passed
        kwargs.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_sampler is not None:
        kwargs["batch_sampler"] = loader.batch_sampler
    else:
        kwargs.update(batch_size=None, sampler=loader.sampler)
    if num_workers > 0:
        kwargs.update(timeout=timeout, worker_init_fn=loader.worker_init_fn,
                      multiprocessing_context=loader.multiprocessing_context,
                      generator=loader.generator)
    return DataLoader(loader.dataset, **kwargs)


def _draw(loader: DataLoader, batches: int, timeout: float) -> dict:
    """Draw batches in a thread so a hang in the main process is seen, not suffered."""
    outcome: dict[str, Any] = {"drawn": 0, "error": None}

    def work() -> None:
        try:
            for batch in loader:
                outcome["drawn"] += 1
                outcome.setdefault("batches", []).append(batch)
                if outcome["drawn"] >= batches:
                    break
        except Exception as exc:  # noqa: BLE001 - reported as the loader's failure
            outcome["error"] = exc

    thread = threading.Thread(target=work, daemon=True, name="torchdoctor-dataloader")
    thread.start()
    thread.join(timeout)
    outcome["hang"] = thread.is_alive()
    return outcome


def _same_batch(one: Any, other: Any) -> bool:
    first, second = list(iter_tensors(one)), list(iter_tensors(other))
    return bool(first) and len(first) == len(second) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second))


def worker_copies(dataset: Any, workers: int, drawn: list[Any]) -> bool | None:
    """Whether every worker of an iterable dataset yields the same stream.

    Each worker runs its own copy of ``__iter__``; one that does not split the
    stream by ``get_worker_info()`` hands out all of it, so an epoch holds the data
    ``num_workers`` times. Batches come from the workers in turn, so the first
    batch of worker 0 and of worker 1 are the first two drawn.
    """
    if not isinstance(dataset, IterableDataset) or workers < 2:
        return None
    if len(drawn) < 2:
        return None
    return _same_batch(drawn[0], drawn[1])


def _sample_shapes(dataset: Any, count: int = 8) -> list[Any]:
    shapes = []
    for index in range(min(count, len(dataset)) if hasattr(dataset, "__len__") else 0):
        try:
            sample = dataset[index]
        except Exception as exc:  # noqa: BLE001 - the sample's own failure is its description
            shapes.append({"index": index, "error": describe_error(exc)})
            continue
        shapes.append({"index": index,
                       "shapes": [list(t.shape) for t in iter_tensors(sample)],
                       "dtypes": [str(t.dtype).replace("torch.", "")
                                  for t in iter_tensors(sample)]})
    return shapes


@probe("dataloader")
def dataloader(ctx: ProbeContext, batches: int = 3, timeout: float = 20.0) -> dict:
    loader = ctx.loader
    if not isinstance(loader, DataLoader):
        return result("inconclusive", "the harness has no DataLoader", {
            "hang": False, "picklable": None, "unpicklable": None, "collate_error": None,
            "sample_shapes": [], "shuffle": None, "num_workers": None, "start_method": None,
            "hang_num_workers": None, "worker_copies": None})
    workers = loader.num_workers
    method = _start_method(loader)
    # an iterable dataset orders its own stream: no sampler shuffles it
    shuffle = None if isinstance(loader.dataset, IterableDataset) \
        else isinstance(loader.sampler, RandomSampler)
    facts: dict[str, Any] = {"hang": False, "picklable": True, "unpicklable": None,
                             "collate_error": None, "sample_shapes": [], "shuffle": shuffle,
                             "num_workers": workers, "start_method": method,
                             "hang_num_workers": None, "worker_copies": None}
    bad = None
    for name, obj in (("dataset", loader.dataset), ("collate_fn", loader.collate_fn),
                      ("worker_init_fn", loader.worker_init_fn)):
        found = _unpicklable(obj, name) if obj is not None else None
        if found is not None:
            bad = found
            facts.update(picklable=False, unpicklable=f"{found[0]} {_why(found[1])}")
            break
    single = _draw(_rebuilt(loader, 0, timeout), batches, timeout)
    if single["hang"]:
        facts.update(hang=True, hang_num_workers=0)
        return result("fail", f"no batch within {timeout:g} s even with num_workers=0: the "
                      "dataset itself blocks", {**facts, "suggestion": HANG_ADVICE})
    if single["error"] is not None:
        exc = single["error"]
        facts["sample_shapes"] = _sample_shapes(loader.dataset)
        if "collate" in "".join(f"{e.name}" for e in _tb_entries(exc)) or \
                "stack expects" in str(exc) or "equal size" in str(exc):
            facts["collate_error"] = describe_error(exc)["message"]
            odd = _odd_sample(facts["sample_shapes"])
            return result("fail", f"collate fails: {facts['collate_error']}"
                          + (f"; sample {odd} differs" if odd is not None else ""), facts,
                          location(op="collate", site=exception_location(exc)))
        return result("fail", f"the dataset raises {type(exc).__name__}: {exc}",
                      {**facts, "error": describe_error(exc)},
                      location(site=exception_location(exc)))
    needs_pickle = workers > 0 and method != "fork"
    if bad is not None and needs_pickle:
        return result("fail", f"{facts['unpicklable']}: {method}-started workers must pickle "
                      f"it (num_workers={workers})", facts,
                      location(op="pickle", site=_code_site(bad[1])))
    if workers > 0:
        multi = _draw(_rebuilt(loader, workers, timeout), batches, timeout + 5)
        error = multi["error"]
        if multi["hang"] or (error is not None and "timed out" in str(error)):
            facts.update(hang=True, hang_num_workers=workers)
            return result("fail", f"no batch within {timeout:g} s with num_workers={workers}, "
                          "though num_workers=0 works", {**facts, "suggestion": HANG_ADVICE})
        if error is not None:
            return result("fail", f"workers fail ({type(error).__name__}: {error}) though "
                          "num_workers=0 works", {**facts, "error": describe_error(error)},
                          location(site=exception_location(error)))
        facts["worker_copies"] = worker_copies(loader.dataset, workers, multi.get("batches", []))
        if facts["worker_copies"]:
            return result("fail", f"each of the {workers} workers yields the same batches: the "
                          "iterable dataset does not split its stream by get_worker_info(), so "
                          f"an epoch holds the data {workers} times", facts,
                          location(site=_iter_site(loader.dataset)))
    if bad is not None:
        return result("warn", f"{facts['unpicklable']}: works with {method} workers here, "
                      "breaks with spawn (macOS, Windows)", facts,
                      location(op="pickle", site=_code_site(bad[1])))
    if shuffle is False:
        return result("warn", "the loader does not shuffle (SequentialSampler): a training "
                      "loader should use shuffle=True", facts)
    return result("pass", f"{single['drawn']} batches drawn with num_workers=0"
                  + (f" and {workers}" if workers else "") + "; picklable"
                  + ("; shuffled" if shuffle else ""), facts)


def _iter_site(dataset: Any) -> dict | None:
    """Where the dataset's ``__iter__`` is written: the place to split the stream."""
    return _code_site(type(dataset).__iter__)


def _tb_entries(exc: BaseException) -> list:
    return traceback.extract_tb(exc.__traceback__)


def _odd_sample(shapes: list[dict]) -> int | None:
    seen = [s.get("shapes") for s in shapes if "shapes" in s]
    if not seen:
        return None
    common = max(seen, key=seen.count)
    return next((s["index"] for s in shapes if s.get("shapes") not in (None, common)), None)

