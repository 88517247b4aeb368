"""The recorder: every torch op of the user's code, in a bounded ring.

Each op keeps what provenance needs to walk a value back to the line that
made it: the op, the user's site, the module it ran in, and for every input
and output tensor an identity (a serial number that outlives ``id()``
reuse), its shape, dtype, device, version counter (bumped by every in-place
write) and the identity of the tensor it is a view of. Optimizer steps are
one event each, with the parameters whose versions they bumped; the ops
inside a step are not recorded one by one. No activation is kept alive:
the ring holds descriptions, identities are held through weak references;
only the top-level modules seen are kept, so that their ids keep naming them.

The ring keeps the last ``ring`` events; ``recorded`` and ``dropped`` say
how much of the run it saw and how much fell out of it.
"""

from __future__ import annotations

import itertools
import os
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter
from torch.utils.weak import WeakIdKeyDictionary

from torchdoctor.patient.probes._describe import tensor_stats
from torchdoctor.patient.probes._frames import USER
from torchdoctor.patient.probes.trace import is_inplace, op_name
from torchdoctor.patient.recorder.sites import Site, code_kind, transparent, user_site

if TYPE_CHECKING:
    from typing_extensions import Self

DEFAULT_RING = 4096
# Tensors looked at per op: the operands a person writes, not a list of a thousand.
_MAX_TENSORS = 8
# Tensor factories that take no tensor and so never reach a TorchFunctionMode.
_FACTORIES = ("from_numpy",)
# Checkpoint files written and read: which save made the checkpoint a load failed on.
_FILE_OPS = ("save", "load")


class Recorder(TorchFunctionMode):
    """Use as ``with Recorder(ring) as rec:``; ``rec.to_json()`` afterwards."""

    def __init__(self, ring: int = DEFAULT_RING) -> None:
        super().__init__()
        self.ring = max(1, int(ring))
        self.events: deque[tuple] = deque(maxlen=self.ring)
        self.recorded = 0
        self.steps = 0
        self.failure: dict[str, Any] | None = None
        self._serials: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._next_serial = itertools.count(1)
        # (path, label) of the modules running: "features.3" and "features.3 (Flatten)"
        self._stack: list[tuple[str, str]] = []
        self._roots: dict[int, dict[int, str]] = {}
        self._root_refs: list[nn.Module] = []
        self._paths: dict[int, tuple[str, str]] = {}
        self._param_names: dict[int, str] = {}
        self._built_at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # Each loader iterator's loader, as the batches it yields are described.
        self._loaders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._modules: dict[str, dict[str, Any]] = {}
        self._in_step = 0
        self._busy = False  # the recorder's own hooks are running: their ops are not the user's
        self._step_versions: list[tuple[torch.Tensor, int]] = []
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str, Any]] = []

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        self._handles = [
            register_module_forward_pre_hook(self._module_pre),
            register_module_forward_hook(self._module_post, always_call=True),
            register_optimizer_step_pre_hook(self._step_pre),
            register_optimizer_step_post_hook(self._step_post),
        ]
        self._patch(nn.Module, "__init__", self._module_init(nn.Module.__init__))
        self._patch(DataLoader, "__init__", self._module_init(DataLoader.__init__))
        self._patch(_BaseDataLoaderIter, "__init__",
                    self._loader_iter_init(_BaseDataLoaderIter.__init__))
        self._patch(_BaseDataLoaderIter, "__next__",
                    self._loader_next(_BaseDataLoaderIter.__next__))
        for name in _FACTORIES:
            original = getattr(torch, name)
            self._patch(torch, name, self._factory(name, original))
        for name in _FILE_OPS:
            original = getattr(torch, name)
            self._patch(torch, name, self._file_op(name, original))
        return super().__enter__()

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._patched.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for owner, name, original in self._patched:
            setattr(owner, name, original)
        self._patched = []

    # ------------------------------------------------------------ ops

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._busy:
            return func(*args, **kwargs)
        name = _recorded_name(func)
        if name is None or self._in_step:
            try:
                return func(*args, **kwargs)
            except Exception:
                if self.failure is None and name is not None:
                    self._fail(name, user_site(2), args, kwargs)
                raise
        site = user_site(2)
        inputs = self._tensors(args, kwargs)
        try:
            out = func(*args, **kwargs)
        except Exception:
            if self.failure is None:
                self._fail(name, site, args, kwargs)
            raise
        inplace = is_inplace(name, kwargs)
        # ``x[i] = v`` returns nothing: the tensor it wrote is its first argument.
        written = args[0] if inplace and out is None and args else out
        self._op(name, site, inputs, written, inplace)
        return out

    def _factory(self, name: str, original: Any) -> Any:
        def factory(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            self._op(f"torch.{name}", user_site(2), (), out, False)
            return out

        return transparent(factory)

    def _file_op(self, name: str, original: Any) -> Any:
        position = 1 if name == "save" else 0  # save(obj, f), load(f)

        def file_op(*args: Any, **kwargs: Any) -> Any:
            target = args[position] if len(args) > position else kwargs.get("f")
            out = original(*args, **kwargs)
            path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else None
            self.recorded += 1
            self.events.append(("file", self.recorded, f"torch.{name}", user_site(2),
                                os.path.abspath(path) if path else None))
            return out

        return transparent(file_op)

    def _module_init(self, original: Any) -> Any:
        """Where each module (and loader) was built: a torch module does only what its
        arguments say, so a property it made wrong is fixed where it was constructed."""
        built_at = self._built_at

        def __init__(module: nn.Module, *args: Any, **kwargs: Any) -> None:
            original(module, *args, **kwargs)
            if module not in built_at:
                built_at[module] = user_site(2)

        return transparent(__init__)

    def _loader_iter_init(self, original: Any) -> Any:
        loaders = self._loaders

        def __init__(iterator: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
            original(iterator, loader, *args, **kwargs)
            loaders[iterator] = loader

        return transparent(__init__)

    def _loader_next(self, original: Any) -> Any:
        """Each batch a loader yields, with how the loader was built: a failure on the
        short last batch of an epoch is fixed where the loader is constructed."""

        def __next__(iterator: Any) -> Any:
            batch = original(iterator)
            loader = self._loaders.get(iterator)
            if loader is not None:
                self._busy = True
                try:
                    described = self._tensors(batch)
                    info = _loader_json(loader, self._built_at.get(loader),
                                        iterator._num_yielded)
                finally:
                    self._busy = False
                self.recorded += 1
                self.events.append(("batch", self.recorded, user_site(2), info, described))
            return batch

        return transparent(__next__)

    def _op(self, name: str, site: Site | None, inputs: tuple, out: Any, inplace: bool) -> None:
        self.recorded += 1
        self.events.append(("op", self.recorded, name, site,
                            self._stack[-1] if self._stack else None,
                            inputs, self._tensors(out), inplace))

    def _tensors(self, *objs: Any) -> tuple:
        found = []
        for obj in objs:
            for t in _flat(obj):
                found.append(self._describe(t))
                if len(found) >= _MAX_TENSORS:
                    return tuple(found)
        return tuple(found)

    def _serial(self, t: torch.Tensor) -> int:
        serial = self._serials.get(t)
        if serial is None:
            serial = self._serials[t] = next(self._next_serial)
        return serial

    def _describe(self, t: torch.Tensor) -> tuple:
        try:
            base = t._base if t._is_view() else None
            return (self._serial(t), tuple(t.shape), t.dtype, t.device, t._version,
                    self._serial(base) if base is not None else None, t.requires_grad)
        except (RuntimeError, TypeError, NotImplementedError):
            # Inference-mode tensors keep no version, nested tensors have no single shape:
            # describing them must never break the user's op.
            return (self._serial(t), (), t.dtype, t.device, None, None, t.requires_grad)

    def _fail(self, name: str, site: Site | None, args: tuple, kwargs: dict) -> None:
        """The op that raised, with statistics of its operands (computed once, here)."""
        operands = []
        for t in itertools.islice(itertools.chain(_flat(args), _flat(kwargs)), _MAX_TENSORS):
            described = _as_json(self._describe(t))
            try:
                described["stats"] = tensor_stats(t)
            except Exception:  # noqa: BLE001 - a tensor without values (meta) has no stats
                described["stats"] = {}
            operands.append(described)
        self.recorded += 1
        self.failure = {"seq": self.recorded, "op": name, **site_json(site),
                        **_module_json(self._stack[-1] if self._stack else None),
                        "inputs": operands}

    # ------------------------------------------------------------ modules

    def _module_pre(self, module: nn.Module, args: tuple) -> None:
        names = self._paths.get(id(module))
        if names is None:
            names = (self._learn_root(module) if not self._stack
                     else (type(module).__name__, type(module).__name__))
        self._stack.append(names)

    def _module_post(self, module: nn.Module, args: tuple, output: Any) -> None:
        if self._stack:
            self._stack.pop()

    def _learn_root(self, root: nn.Module) -> tuple[str, str]:
        """Name every submodule of a top-level module by its path (the root by its class)."""
        self._busy = True
        try:
            return self._learn_paths(root)
        finally:
            self._busy = False

    def _learn_paths(self, root: nn.Module) -> tuple[str, str]:
        self._root_refs.append(root)
        for path, sub in root.named_modules():
            names = self._paths.setdefault(
                id(sub), (path or type(root).__name__, module_name(root, path, sub)))
            if names[1] not in self._modules:
                self._modules[names[1]] = {
                    "path": names[0],
                    "type": type(sub).__name__,
                    "torch_builtin": type(sub).__module__.startswith("torch."),
                    "built_at": site_json(self._built_at.get(sub)) if sub in self._built_at
                    else None,
                }
        for name, p in root.named_parameters():
            self._param_names.setdefault(id(p), name)
        return self._paths[id(root)]

    # ------------------------------------------------------------ optimizer steps

    def _step_pre(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        self._in_step += 1
        self._busy = True
        try:
            self._step_versions = [(p, p._version) for group in optimizer.param_groups
                                   for p in group["params"]]
        finally:
            self._busy = False

    def _step_post(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        self._in_step = max(0, self._in_step - 1)
        self._busy = True
        try:
            bumped = [(*self._describe(p), before, self._param_names.get(id(p)))
                      for p, before in self._step_versions if p._version != before]
        finally:
            self._busy = False
        self._step_versions = []
        self.recorded += 1
        self.steps += 1
        # Frames from here: this hook, the optimizer's wrapper, then the user's call.
        self.events.append(("step", self.recorded, type(optimizer).__name__, user_site(2),
                            tuple(bumped)))

    # ------------------------------------------------------------ the failure's frame

    def outer_frame(self, error: BaseException | None) -> dict[str, Any] | None:
        """The outermost user frame of ``error`` and the recorded tensors it holds by name.

        That frame is where the program keeps what lives from one iteration to the
        next (``prediction, h = rnn(x, h)`` in the loop): a value carried across
        iterations is fixed where it binds the name, not deep in the model.
        """
        tb = error.__traceback__ if error is not None else None
        while tb is not None and code_kind(tb.tb_frame.f_code) != USER:
            tb = tb.tb_next
        if tb is None:
            return None
        frame, code = tb.tb_frame, tb.tb_frame.f_code
        names: dict[str, str] = {}  # serial (a JSON key) → the name the frame holds it by
        for name, value in list(frame.f_locals.items())[:512]:
            serial = self._serials.get(value) if isinstance(value, torch.Tensor) else None
            if serial is not None:
                names.setdefault(str(serial), name)
        return {"file": code.co_filename, "line": tb.tb_lineno,
                "first_line": code.co_firstlineno, "names": names}

    # ------------------------------------------------------------ out

    def to_json(self) -> dict[str, Any]:
        events = [_event_json(e) for e in self.events]
        return {
            "ring": self.ring,
            "recorded": self.recorded,
            "kept": len(events),
            "dropped": self.recorded - len(events) - (1 if self.failure else 0),
            "optimizer_steps": self.steps,
            "events": events,
            "failure": self.failure,
            "modules": self._modules,
        }


def module_name(root: nn.Module, path: str, module: nn.Module) -> str:
    """A name a person reads: ``head (Linear)``, ``Sequential[3] (Flatten)``, ``GatedNet``.

    A numbered child of the top-level module is named through it, since ``3``
    alone says nothing; the root is named by its class.
    """
    if not path:
        return type(root).__name__
    first, _, rest = path.partition(".")
    if first.isdigit():
        path = f"{type(root).__name__}[{first}]" + (f".{rest}" if rest else "")
    return f"{path} ({type(module).__name__})"


def _recorded_name(func: Any) -> str | None:
    """The op's name, or None for what the user did not write: metadata queries, private
    helpers (``Tensor._is_view``) and the profiler's markers around module calls."""
    name = op_name(func)
    if name is None or name.startswith("profiler."):
        return None
    bare = name.rsplit(".", 1)[-1]
    if bare.startswith("_") and not bare.startswith("__"):
        return None
    return name


def _loader_json(loader: Any, built: Site | None, yielded: int) -> dict[str, Any]:
    """What decides a loader's batches: its size, whether the short last one is dropped,
    the dataset's length, and which batch of the epoch this one is."""
    try:
        batches, dataset_len = len(loader), len(loader.dataset)
    except TypeError:  # an iterable dataset without a length
        batches = dataset_len = None
    return {"built_at": site_json(built) if built is not None else None,
            "batch_size": loader.batch_size, "drop_last": bool(loader.drop_last),
            "dataset_len": dataset_len, "batches": batches, "index": yielded}


def _module_json(names: tuple[str, str] | None) -> dict[str, Any]:
    return {"module": names[0] if names else None, "module_label": names[1] if names else None}


def _flat(obj: Any, depth: int = 0):
    """Tensors among an op's arguments: top level and one level into lists, tuples, dicts."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 2 and isinstance(obj, (tuple, list)):
        for item in obj:
            yield from _flat(item, depth + 1)
    elif depth < 2 and isinstance(obj, dict):
        for item in obj.values():
            yield from _flat(item, depth + 1)


def site_json(site: Site | None) -> dict[str, Any]:
    if site is None:
        return {"file": None, "line": None, "function": None}
    code, line = site
    return {"file": code.co_filename, "line": line,
            "function": getattr(code, "co_qualname", code.co_name)}


def _as_json(described: tuple) -> dict[str, Any]:
    serial, shape, dtype, device, version, base, grad = described[:7]
    return {"id": serial, "shape": list(shape), "dtype": str(dtype).removeprefix("torch."),
            "device": str(device), "version": version, "base": base, "grad": grad}


def _event_json(event: tuple) -> dict[str, Any]:
    if event[0] == "op":
        _, seq, name, site, module, inputs, outputs, inplace = event
        return {"kind": "op", "seq": seq, "op": name, **site_json(site), **_module_json(module),
                "inplace": inplace, "inputs": [_as_json(t) for t in inputs],
                "outputs": [_as_json(t) for t in outputs]}
    if event[0] == "batch":
        _, seq, site, loader, outputs = event
        return {"kind": "batch", "seq": seq, "op": "DataLoader.__next__", **site_json(site),
                **_module_json(None), "inplace": False, "inputs": [],
                "outputs": [_as_json(t) for t in outputs], "loader": loader}
    if event[0] == "file":
        _, seq, name, site, path = event
        return {"kind": "file", "seq": seq, "op": name, **site_json(site), **_module_json(None),
                "inplace": False, "inputs": [], "outputs": [], "path": path}
    _, seq, optimizer, site, bumped = event
    params = [{**_as_json(p), "version_before": p[7], "name": p[8]} for p in bumped]
    return {"kind": "optimizer_step", "seq": seq, "op": f"{optimizer}.step", **site_json(site),
            **_module_json(None), "inplace": True, "inputs": [], "outputs": params}
