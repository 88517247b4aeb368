"""Memory probes: where a training step peaks, and what keeps memory growing across steps.

On CUDA the allocator's own peak statistics are exact. On the CPU there is
no allocator to ask, so a dispatch mode keeps a ledger of every tensor
storage the step creates (bytes, shape, the op and module that made it) and
drops each entry when torch frees that storage.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
from collections import deque
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._copies import replica, standard_optimizer
from torchdoctor.patient.probes._errors import describe_error
from torchdoctor.patient.probes._frames import exception_location, location
from torchdoctor.patient.probes._tensors import iter_tensors

PHASES = ("forward", "loss", "backward", "step")
LARGEST = 5


class StorageLedger(TorchDispatchMode):
    """Live bytes of the storages created while active, with the peak and what made it."""

    def __init__(self, model: torch.nn.Module | None = None, exact_peak: bool = True) -> None:
        super().__init__()
        self.exact_peak = exact_peak  # sweep frees at every op, or only when asked
        self.live: dict[int, tuple[StorageWeakRef, int, dict]] = {}
        self.bytes = 0
        self.peak = 0
        self.peak_tensors: list[dict] = []
        self.module_stack: list[str] = []
        self._handles = []
        if model is not None:
            for name, m in model.named_modules():
                self._handles.append(m.register_forward_pre_hook(
                    lambda mod, args, n=name: self.module_stack.append(n)))
                self._handles.append(m.register_forward_hook(self._leave_module))

    def _leave_module(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self.module_stack:
            self.module_stack.pop()

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()

    def sweep(self) -> None:
        for key in [k for k, (ref, _, _) in self.live.items() if ref.expired()]:
            self.bytes -= self.live.pop(key)[1]

    def reset_peak(self) -> None:
        self.sweep()
        self.peak = self.bytes
        self.peak_tensors = self._largest()

    def _largest(self) -> list[dict]:
        entries = sorted(self.live.values(), key=lambda e: e[1], reverse=True)[:LARGEST]
        return [info for _, _, info in entries]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.exact_peak:
            self.sweep()
        for t in iter_tensors(out):
            if t.device.type == "meta" or t.is_sparse:
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key == 0 or key in self.live and not self.live[key][0].expired():
                continue
            if key in self.live:  # freed, and its address reused by this new storage
                self.bytes -= self.live.pop(key)[1]
            nbytes = storage.nbytes()
            info = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                    "bytes": nbytes, "op": str(func.overloadpacket.__name__),
                    "module": self.module_stack[-1] if self.module_stack else None}
            self.live[key] = (StorageWeakRef(storage), nbytes, info)
            self.bytes += nbytes
        if self.bytes > self.peak:
            self.peak = self.bytes
            self.peak_tensors = self._largest()
        return out


def _rss() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _on_cuda(ctx: ProbeContext) -> bool:
    return any(p.is_cuda for p in ctx.model.parameters())


@probe("memory_phases")
def memory_phases(ctx: ProbeContext) -> dict:
    rep = replica(ctx)
    rep.model.train(ctx.model.training)
    optimizer = rep.optimizer or standard_optimizer(rep)
    cuda = _on_cuda(rep)
    peaks: dict[str, int] = {}
    rss: dict[str, int | None] = {}
    largest: list[dict] = []
    ledger = StorageLedger(rep.model)
    try:
        optimizer.zero_grad(set_to_none=True)
        values: dict[str, Any] = {}
        actions = {
            "forward": lambda: values.__setitem__("out", rep.forward()),
            "loss": lambda: values.__setitem__("loss", rep.loss(values["out"])),
            "backward": lambda: values["loss"].backward(),
            "step": optimizer.step,
        }
        top = -1
        for phase in PHASES:
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                actions[phase]()
                torch.cuda.synchronize()
                peaks[phase] = int(torch.cuda.max_memory_allocated())
            else:
                ledger.reset_peak()
                with ledger:
                    actions[phase]()
                peaks[phase] = ledger.peak
                if ledger.peak > top:
                    top, largest = ledger.peak, ledger.peak_tensors
            rss[phase] = _rss()
    except Exception as exc:  # noqa: BLE001 - the user's step failing is a finding
        return result("error", f"the step raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "peaks": peaks, "largest_tensors": []},
                      location(site=exception_location(exc)))
    finally:
        ledger.close()
    worst = max(peaks, key=peaks.get)
    facts = {"peaks": peaks, "largest_tensors": largest, "peak_phase": worst,
             "accounting": "cuda allocator" if cuda else "tensor storages created by the step",
             "rss_after": rss}
    return result("pass", "peak " + ", ".join(f"{p} {_mb(b)}" for p, b in peaks.items())
                  + f"; highest in {worst}", facts,
                  location(module=largest[0]["module"], op=largest[0]["op"]) if largest else None)


def _mb(n: int) -> str:
    if n >= 2**16:
        return f"{n / 2**20:.2f} MB"
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


@probe("memory_growth")
def memory_growth(ctx: ProbeContext, steps: int = 20) -> dict:
    rep = replica(ctx)
    rep.model.train(ctx.model.training)
    if rep.optimizer is None and rep.train_step is None:
        rep.optimizer = standard_optimizer(rep)
    roots = _holder_roots(ctx)
    before = {path: _graph_tensors(obj) for path, (obj, _) in roots.items()}
    bindings = _tensor_bindings(ctx)
    bound_before = {name: (read(), _graph_nodes(read())) for name, (read, _, _) in
                    bindings.items()}
    lengths = {path: len(obj) for path, (obj, _) in roots.items() if isinstance(obj, list)}
    per_iter: list[int] = []
    rss: list[int | None] = []
    ledger = StorageLedger(exact_peak=False)
    try:
        with ledger:
            for _ in range(max(3, steps)):
                rep.step()
                ledger.sweep()
                per_iter.append(ledger.bytes)
                rss.append(_rss())
    except Exception as exc:  # noqa: BLE001 - the user's step failing is a finding
        return result("error", f"train_step raised {type(exc).__name__}: {exc}",
                      {"error": describe_error(exc), "growing": False,
                       "per_iter_bytes": per_iter, "holders": []},
                      location(site=exception_location(exc)))
    holders = []
    for path, (obj, where) in roots.items():
        added = _graph_tensors(obj) - before[path]
        if added > 0:
            holders.append({"name": path, "kind": type(obj).__name__, "where": where,
                            "tensors_with_graph": added,
                            "description": f"{type(obj).__name__} `{path}` in {where} holds "
                                           f"{added} more tensors with grad_fn (each keeps its "
                                           "graph)"})
    for name, (read, write, where) in bindings.items():
        value, nodes = bound_before[name]
        grown = _graph_nodes(read()) - nodes
        if grown > 0:
            holders.append({"name": name, "kind": "Tensor", "where": where,
                            "tensors_with_graph": 1, "graph_nodes_added": grown,
                            "description": f"tensor `{name}` in {where} carries a graph that"
                                           f" grew by {grown} nodes over {len(per_iter)} steps"
                                           " (every step's graph stays alive)"})
        write(value)  # undo what the probe's own steps accumulated
    for path, length in lengths.items():  # undo what the probe's own steps appended
        del roots[path][0][length:]
    gc.collect()
    half = len(per_iter) // 2
    tail = per_iter[half:]
    slope = (tail[-1] - tail[0]) / max(1, len(tail) - 1)
    growing = slope > 0 and all(b > a for a, b in itertools.pairwise(tail))
    facts = {"growing": growing, "per_iter_bytes": per_iter, "growth_per_step": int(slope),
             "holders": holders, "rss": rss}
    if not growing and not holders:
        return result("pass", f"memory is flat over {len(per_iter)} steps "
                      f"({_mb(per_iter[-1])} held between steps)", facts)
    if holders:
        first = holders[0]
        site = _append_site(ctx, first["name"])
        grows = (f"memory grows {_mb(int(slope))} per step" if slope > 0 else
                 "the step keeps its graphs alive")
        return result("fail", f"{grows}: {first['description']}", facts,
                      location(op="append", site=site))
    return result("fail", f"memory grows {_mb(int(slope))} per step; no holder found in the "
                  "harness's globals, closures or modules", facts)


def _holder_roots(ctx: ProbeContext) -> dict[str, tuple[Any, str]]:
    """Containers the user's code can append to: globals and closures of its functions,
    and list/dict attributes of the model's modules (hooks that accumulate outputs)."""
    roots: dict[str, tuple[Any, str]] = {}
    containers = (list, dict, deque)
    for fn, label in ((ctx.train_step, "train_step"), (ctx.loss_fn, "loss_fn")):
        fn = getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        for name in code.co_names:
            value = getattr(fn, "__globals__", {}).get(name)
            if isinstance(value, containers):
                roots[name] = (value, f"{label}'s module globals")
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            value = cell.cell_contents
            if isinstance(value, containers):
                roots[name] = (value, f"{label}'s closure")
    for mod_name, module in ctx.model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, containers) and not attr.startswith("_"):
                path = f"{mod_name}.{attr}" if mod_name else attr
                roots[path] = (value, f"module `{mod_name or 'model'}`")
    return roots


def _tensor_bindings(ctx: ProbeContext) -> dict[str, tuple[Any, Any, str]]:
    """Names the user's step rebinds to a running total (``running_loss += loss``): the
    globals and closure cells of its functions, with a reader and a writer each. A total
    kept as a tensor chains every step's graph onto the last one."""
    found: dict[str, tuple[Any, Any, str]] = {}
    for fn, label in ((ctx.train_step, "train_step"), (ctx.loss_fn, "loss_fn")):
        fn = getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        space = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in space and isinstance(space[name], (int, float, torch.Tensor)):
                found[name] = (lambda n=name, g=space: g.get(n),
                               lambda v, n=name, g=space: g.__setitem__(n, v),
                               f"{label}'s module globals")
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not yet bound
                continue
            if isinstance(value, (int, float, torch.Tensor)):
                found[name] = (lambda c=cell: c.cell_contents,
                               lambda v, c=cell: setattr(c, "cell_contents", v),
                               f"{label}'s closure")
    return found


_NODE_LIMIT = 100_000


def _graph_nodes(value: Any) -> int:
    """How many autograd nodes a tensor's graph holds (0 for anything else), up to a bound."""
    root = getattr(value, "grad_fn", None) if isinstance(value, torch.Tensor) else None
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack and len(seen) < _NODE_LIMIT:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return len(seen)


def _graph_tensors(container: Any) -> int:
    values = container.values() if isinstance(container, dict) else container
    return sum(1 for v in list(values) for t in iter_tensors(v) if t.grad_fn is not None)


def _append_site(ctx: ProbeContext, name: str) -> dict | None:
    """The line of the user's code that appends to the holder, found in its source file."""
    fn = ctx.train_step or ctx.loss_fn
    filename = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if not filename or not os.path.exists(filename):
        return None
    leaf = re.escape(name.rsplit(".", 1)[-1])
    pattern = re.compile(rf"\b{leaf}\s*(\.append\(|\.extend\(|\+=|\[.*\]\s*=)")
    with open(filename, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if pattern.search(line):
                return {"file": filename, "line": number}
    return None
