"""The CPU fallback: make a script written for CUDA run, unchanged, on the CPU.

A device-side assert hides the real error (the offending index) behind an
asynchronous CUDA failure; the same step on the CPU raises it plainly. Users
hard-code ``.cuda()``, ``.to("cuda")`` and ``device="cuda"``, so with
``TORCHDOCTOR_DEVICE=cpu`` a torch-function mode, entered for the life of the
patient, rewrites every CUDA device it sees to the CPU before the call runs.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_CPU = torch.device("cpu")


def _is_cuda(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cuda"
    if isinstance(value, str):
        return value == "cuda" or value.startswith("cuda:")
    return False


def _to_cpu(value: Any) -> Any:
    return _CPU if _is_cuda(value) else value


class CudaToCpu(TorchFunctionMode):
    """Rewrites CUDA devices in arguments to the CPU; turns ``.cuda()`` into ``.cpu()``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0].cpu()
        if "device" in kwargs:
            kwargs["device"] = _to_cpu(kwargs["device"])
        if func is torch.Tensor.to and len(args) > 1:
            args = (args[0], _to_cpu(args[1]), *args[2:])
        return func(*args, **kwargs)


_active: CudaToCpu | None = None


def _module_cuda(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
    return self.cpu()


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def install_cpu_fallback() -> None:
    """Enter the remapping for good; idempotent."""
    global _active
    if _active is not None:
        return
    _active = CudaToCpu()
    _active.__enter__()
    torch.nn.Module.cuda = _module_cuda
    torch.cuda.synchronize = _noop


def mps_available() -> bool:
    """Whether Apple's GPU can be used (torch builds without the backend lack the module)."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def requested_device() -> str | None:
    return os.environ.get("TORCHDOCTOR_DEVICE") or None


def apply_from_environment() -> str | None:
    """Install what ``TORCHDOCTOR_DEVICE`` asks for; returns the device remapped to."""
    device = requested_device()
    if device == "cpu":
        install_cpu_fallback()
    return device
