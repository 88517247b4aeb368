"""Reaching the user's model: a harness they wrote for us, or their own script.

A harness hands over the parts directly. A script is run as ``__main__`` under
watch; when it raises, its failing frames are kept alive and searched for the
model, the batch, the loss, the optimizer and the loader, so that probes can
rerun the step that failed without the user writing anything.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import runpy
import sys
import sysconfig
import traceback
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.optim.optimizer import register_optimizer_step_pre_hook

from torchdoctor.patient.context import ProbeContext

if TYPE_CHECKING:
    from typing_extensions import Self

INPUT_NAMES = ("x", "inputs", "input", "images", "imgs", "data", "features", "src",
               "tokens", "input_ids", "xb")
TARGET_NAMES = ("y", "targets", "target", "labels", "label", "tgt", "yb")
BATCH_NAMES = ("batch", "sample", "minibatch")

_TORCHDOCTOR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple(
    os.path.abspath(p) for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(torch.__file__),
    }
)


class TargetError(Exception):
    """The target itself is unusable: a missing file, a bad spec, a malformed harness."""


class UserCodeError(Exception):
    """The user's own code raised while being imported or built; carries their traceback."""

    def __init__(self, exc: BaseException) -> None:
        self.original = exc
        self.type_name = type(exc).__name__
        self.message = safe_str(exc)
        super().__init__(f"{self.type_name}: {self.message}")
        self.traceback_text = user_traceback(exc)


def is_internal(filename: str) -> bool:
    """Frames of torchdoctor itself and of the machinery that runs the target."""
    return (
        filename.startswith("<frozen")
        or os.path.abspath(filename).startswith(_TORCHDOCTOR_DIR + os.sep)
        or os.path.basename(filename) == "runpy.py"
    )


def is_library(filename: str) -> bool:
    path = os.path.abspath(filename)
    return any(path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def user_traceback(exc: BaseException) -> str:
    """The traceback as the user would see it from ``python script.py``: no torchdoctor frames.

    Linear in the depth of the stack, and at most ``KEPT_FRAMES`` frames of
    each exception are kept: the outermost and the innermost half, with a
    line saying how many between them were dropped (a RecursionError at a
    depth of a million is a few dozen lines, not a million).
    """
    entries = _tracebacks(exc.__traceback__)
    if len(entries) <= KEPT_FRAMES:
        te = traceback.TracebackException.from_exception(exc)
    else:
        # A positive limit reads only the outermost frames; the innermost are
        # taken from the list, without the column lookups of every frame between.
        te = traceback.TracebackException.from_exception(exc, limit=KEPT_FRAMES // 2)
        tail = traceback.StackSummary.extract(
            (tb.tb_frame, tb.tb_lineno) for tb in entries[-KEPT_FRAMES // 2:])
        te.stack = _CutStack(list(te.stack), list(tail),
                             len(entries) - len(te.stack) - len(tail))
    seen: set[int] = set()
    pending = [te]
    while pending:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        node.stack = _without_internal(node.stack)
        pending.extend([node.__cause__, node.__context__])
    return "".join(te.format())


KEPT_FRAMES = 100


class _CutStack(traceback.StackSummary):
    """The outermost and innermost frames of a deep stack, with what lies between counted."""

    def __init__(self, head: list, tail: list, dropped: int) -> None:
        super().__init__(head + tail)
        self.cut = len(head)
        self.dropped = dropped

    def format(self) -> list[str]:
        note = (f"  [... skipping {self.dropped} frames: the outermost {self.cut} and the"
                f" innermost {len(self) - self.cut} are shown]\n")
        return (traceback.StackSummary.from_list(self[: self.cut]).format() + [note]
                + traceback.StackSummary.from_list(self[self.cut:]).format())


def _without_internal(stack: traceback.StackSummary) -> traceback.StackSummary:
    if isinstance(stack, _CutStack):
        head = [f for f in stack[: stack.cut] if not is_internal(f.filename)]
        tail = [f for f in stack[stack.cut:] if not is_internal(f.filename)]
        return _CutStack(head, tail, stack.dropped)
    return traceback.StackSummary.from_list([f for f in stack if not is_internal(f.filename)])


def _tracebacks(tb: types.TracebackType | None) -> list[types.TracebackType]:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or what Python itself prints when the exception's ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 — the user's __str__ may raise anything
        return "<exception str() failed>"


def error_dict(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": safe_str(exc),
            "traceback": user_traceback(exc)}


# ---------------------------------------------------------------- description


def describe(obj: Any) -> str:
    """A one-line description that is safe to send over the wire."""
    if isinstance(obj, torch.Tensor):
        dtype = str(obj.dtype).removeprefix("torch.")
        return f"Tensor{list(obj.shape)} {dtype} {obj.device}"
    if isinstance(obj, nn.Module):
        count = sum(p.numel() for p in obj.parameters())
        return f"{type(obj).__name__} ({count:,} parameters)"
    if isinstance(obj, torch.optim.Optimizer):
        lrs = sorted({g.get("lr") for g in obj.param_groups if "lr" in g}, key=repr)
        return f"{type(obj).__name__} (lr={', '.join(repr(v) for v in lrs)})"
    if isinstance(obj, torch.utils.data.DataLoader):
        return (f"DataLoader (batch_size={obj.batch_size}, num_workers={obj.num_workers},"
                f" dataset={type(obj.dataset).__name__})")
    if isinstance(obj, (tuple, list)):
        return f"{type(obj).__name__}({', '.join(describe(v) for v in obj[:4])})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in list(obj.items())[:6]) + "}"
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"{name}"


def describe_context(ctx: ProbeContext) -> dict[str, str]:
    parts = {
        "model": ctx.model, "inputs": ctx.inputs if ctx.batch is not None else None,
        "targets": ctx.targets if ctx.batch is not None else None, "loss_fn": ctx.loss_fn,
        "optimizer": ctx.optimizer, "train_step": ctx.train_step, "loader": ctx.loader,
    }
    found = {name: describe(obj) for name, obj in parts.items() if obj is not None}
    if ctx.num_classes is not None:
        found["num_classes"] = str(ctx.num_classes)
    return found


# ---------------------------------------------------------------- harness


def _import_target(target: str) -> types.ModuleType:
    if target.endswith(".py") or os.sep in target or "/" in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise TargetError(f"harness file not found: {target}")
        directory = os.path.dirname(path)
        if directory not in sys.path:
            sys.path.insert(0, directory)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 — any exception of the user's is theirs
            sys.modules.pop(name, None)
            raise UserCodeError(exc) from None
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise TargetError(f"cannot import {target!r}: no module named {exc.name!r}") from None
        raise UserCodeError(exc) from None
    except BaseException as exc:  # noqa: BLE001 — any exception of the user's is theirs
        raise UserCodeError(exc) from None


def load_harness(spec: str) -> ProbeContext:
    """Import ``FILE.py:NAME`` or ``package.module:NAME``, call it and check what it returns."""
    target, _, name = spec.rpartition(":")
    if not target or not name.isidentifier():
        raise TargetError(
            f"a harness is FILE.py:NAME or package.module:NAME, got {spec!r}")
    module = _import_target(target)
    if not hasattr(module, name):
        public = sorted(n for n in vars(module) if not n.startswith("_")
                        and callable(getattr(module, n)))[:12]
        raise TargetError(f"{target} has no {name!r} (callables there: {', '.join(public)})")
    factory = getattr(module, name)
    if not callable(factory):
        raise TargetError(f"{target}:{name} is a {type(factory).__name__}, not a callable")
    from torchdoctor.patient.built_at import noting_optimizers

    try:
        with noting_optimizers():
            parts = factory()
    except BaseException as exc:  # noqa: BLE001 — any exception of the user's is theirs
        raise UserCodeError(exc) from None
    return context_from_parts(parts, f"{target}:{name}")


def context_from_parts(parts: Any, origin: str = "the harness") -> ProbeContext:
    """Validate a harness's dict; each message names the key and what was wrong with it."""
    if not isinstance(parts, dict):
        raise TargetError(
            f"{origin} returned a {type(parts).__name__}; expected a dict with"
            " 'model', 'batch' and 'loss_fn'")
    for key in ("model", "batch", "loss_fn"):
        if key not in parts:
            raise TargetError(
                f"harness returned no {key!r}: it returned keys {sorted(map(str, parts))};"
                " required are 'model', 'batch' and 'loss_fn'")
    model, batch, loss_fn = parts["model"], parts["batch"], parts["loss_fn"]
    if not isinstance(model, nn.Module):
        hint = (" — did you forget to call it?"
                if callable(model) and not isinstance(model, nn.Module) else "")
        kind = "function" if isinstance(model, types.FunctionType) else type(model).__name__
        if isinstance(model, type):
            kind, hint = "class", " — did you forget to instantiate it?"
        raise TargetError(f"'model' is a {kind}, expected torch.nn.Module{hint}")
    if isinstance(batch, (tuple, list)):
        if len(batch) != 2:
            raise TargetError(
                f"'batch' is a {type(batch).__name__} of {len(batch)} items;"
                " expected (inputs, targets) or a dict")
    elif not isinstance(batch, dict):
        raise TargetError(
            f"'batch' is a {type(batch).__name__}; expected (inputs, targets) or a dict")
    if not callable(loss_fn):
        raise TargetError(f"'loss_fn' is a {type(loss_fn).__name__}, expected a callable")
    optimizer = parts.get("optimizer")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise TargetError(
            f"'optimizer' is a {type(optimizer).__name__}, expected torch.optim.Optimizer")
    train_step = parts.get("train_step")
    if train_step is not None and not callable(train_step):
        raise TargetError(f"'train_step' is a {type(train_step).__name__}, expected a callable")
    num_classes = parts.get("num_classes")
    if num_classes is not None and (not isinstance(num_classes, int)
                                    or isinstance(num_classes, bool)):
        raise TargetError(f"'num_classes' is a {type(num_classes).__name__}, expected an int")
    known = {"model", "batch", "loss_fn", "optimizer", "train_step", "loader", "num_classes"}
    return ProbeContext(
        model=model, batch=batch, loss_fn=loss_fn, optimizer=optimizer,
        train_step=train_step, loader=parts.get("loader"), num_classes=num_classes,
        source="harness", extras={k: v for k, v in parts.items() if k not in known},
    )


# ---------------------------------------------------------------- script under watch


class CallRecorder:
    """Remembers the latest outermost module call, loss module and optimizer.

    Kept cheap on purpose (a counter and three references per call) because it
    runs on every module call of the user's whole training run. When the
    failure is deep inside the model, this is how the model's own inputs are
    known even though no frame names them.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.model: nn.Module | None = None
        self.model_args: tuple = ()
        self.loss: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self._handles: list[Any] = []

    def _pre(self, module: nn.Module, args: tuple) -> None:
        if self.depth == 0:
            if isinstance(module, nn.modules.loss._Loss):
                self.loss = module
            else:
                self.model, self.model_args = module, args
        self.depth += 1

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.depth = max(0, self.depth - 1)

    def _step(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        self.optimizer = optimizer

    def __enter__(self) -> Self:
        self._handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post, always_call=True),
            register_optimizer_step_pre_hook(self._step),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


@dataclass
class ScriptOutcome:
    report: dict[str, Any]
    context: ProbeContext | None


def _frames(tb: types.TracebackType | None) -> list[types.FrameType]:
    """The traceback's frames, of a deep one only the outermost and innermost ``KEPT_FRAMES``."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if len(frames) > KEPT_FRAMES:
        frames = frames[: KEPT_FRAMES // 2] + frames[-KEPT_FRAMES // 2:]
    return frames


def _ordered_frames(exc: BaseException) -> list[types.FrameType]:
    """User frames innermost first, then library frames innermost first."""
    frames = [f for f in reversed(_frames(exc.__traceback__))
              if not is_internal(f.f_code.co_filename)]
    user = [f for f in frames if not is_library(f.f_code.co_filename)]
    return user + [f for f in frames if is_library(f.f_code.co_filename)]


def _is_loss_callable(name: str, value: Any) -> bool:
    if isinstance(value, nn.modules.loss._Loss):
        return True
    if isinstance(value, (torch.Tensor, nn.Module, type)) or not callable(value):
        return False
    lowered = name.lower()
    return "loss" in lowered or "criterion" in lowered


class _Finder:
    def __init__(self) -> None:
        self.modules: list[nn.Module] = []
        self.loss_fn: Any = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.loader: Any = None
        self.inputs: Any = None
        self.targets: Any = None
        self.batch: Any = None

    def scan(self, namespace: dict[str, Any], inside_module: bool, depth: int = 0) -> None:
        for name, value in list(namespace.items()):
            if _is_loss_callable(name, value):
                self.loss_fn = self.loss_fn if self.loss_fn is not None else value
            elif isinstance(value, nn.Module):
                if not any(value is m for m in self.modules):
                    self.modules.append(value)
            elif isinstance(value, torch.optim.Optimizer):
                self.optimizer = self.optimizer or value
            elif isinstance(value, torch.utils.data.DataLoader):
                self.loader = self.loader or value
            elif inside_module:
                continue  # a forward's locals are activations, not the batch
            elif isinstance(value, torch.Tensor):
                if name in INPUT_NAMES and self.inputs is None:
                    self.inputs = value
                elif name in TARGET_NAMES and self.targets is None:
                    self.targets = value
            elif (name in BATCH_NAMES and self.batch is None
                  and isinstance(value, (tuple, list, dict))):
                self.batch = value
            elif isinstance(value, dict) and depth == 0:
                self.scan_parts(value)

    def scan_parts(self, parts: dict) -> None:
        """A config or parts dict (``parts["loss_fn"]``) holds the objects no local names."""
        named = {key: value for key, value in list(parts.items())[:64] if isinstance(key, str)
                 and not isinstance(value, (torch.Tensor, tuple, list, dict))}
        self.scan(named, inside_module=False, depth=1)

    def outermost_model(self, recorded: nn.Module | None,
                        exc: BaseException | None = None) -> nn.Module | None:
        """The model probes replay: the largest one, or the latest outermost call's module.

        That call's module even when it is part of a larger model, if the failure was
        raised inside it and the user's own code, not the larger model's, called it
        (``for layer in vgg.children(): x = layer(x)``): its recorded arguments are what
        reached the failing op, and the larger model's input is not. When a method of
        the larger model made the call, what fed it lies in that model, and replaying
        the part alone would hide it.
        """
        roots = [m for m in self.modules
                 if not any(o is not m and any(m is s for s in o.modules())
                            for o in self.modules)]
        containing = [r for r in roots
                      if recorded is not r and any(recorded is s for s in r.modules())]
        if recorded is not None and (not containing or (
                _raised_inside(exc, recorded)
                and not any(_raised_inside(exc, r) for r in containing))):
            return recorded
        if not roots:
            return None
        return max(roots, key=lambda m: sum(p.numel() for p in m.parameters()))


def _raised_inside(exc: BaseException | None, module: nn.Module | None) -> bool:
    """Whether the failure came through ``module``'s own call (one of its frames is bound to it)."""
    if exc is None or module is None:
        return False
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_locals.get("self") is module:
            return True
        tb = tb.tb_next
    return False


def recover_context(exc: BaseException | None, namespace: dict[str, Any] | None,
                    recorder: CallRecorder) -> ProbeContext:
    """The live objects of a failed (or finished) script, as probes expect them."""
    finder = _Finder()
    if exc is not None:
        for frame in _ordered_frames(exc):
            inside = isinstance(frame.f_locals.get("self"), nn.Module)
            finder.scan(frame.f_locals, inside)
    if namespace is not None:
        finder.scan(namespace, False)
    model = finder.outermost_model(recorder.model, exc)
    inputs = finder.inputs
    if model is not None and model is recorder.model and recorder.model_args:
        args = recorder.model_args
        inputs = args[0] if len(args) == 1 else tuple(args)
    batch = finder.batch
    if inputs is not None or finder.targets is not None:
        batch = (inputs, finder.targets)
    return ProbeContext(
        model=model, batch=batch,
        loss_fn=finder.loss_fn if finder.loss_fn is not None else recorder.loss,
        optimizer=finder.optimizer or recorder.optimizer, loader=finder.loader,
        source="script",
        error=error_dict(exc) if exc is not None else None,
        extras={"exception": exc} if exc is not None else {},
    )


def run_script(path: str, argv: list[str] | None = None,
               cwd: str | None = None) -> ScriptOutcome:
    """Run a script as ``python SCRIPT ARGS`` would, and report how it ended.

    ``sys.path[0]`` is the script's directory and ``sys.argv`` its own; the
    working directory is ``cwd`` or the patient's. A ``SystemExit`` is an
    exit, not a crash.
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise TargetError(f"script not found: {path}")
    if cwd:
        os.chdir(cwd)
    saved_argv = sys.argv
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(path))
    exc: BaseException | None = None
    namespace: dict[str, Any] | None = None
    exit_code = 0
    exited = "clean"
    try:
        with CallRecorder() as recorder:
            try:
                namespace = runpy.run_path(path, run_name="__main__")
            except SystemExit as stop:
                exited, exit_code = "sys.exit", _exit_code(stop.code)
            except BaseException as raised:  # noqa: BLE001 — reported, not re-raised
                exc, exited, exit_code = raised, "raised", 1
    finally:
        sys.argv = saved_argv
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    context = recover_context(exc, namespace, recorder)
    report = {
        "exited": exited, "exit_code": exit_code,
        "traceback": context.error["traceback"] if context.error else None,
        "error": context.error,
        "found": describe_context(context),
    }
    return ScriptOutcome(report, context)


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
