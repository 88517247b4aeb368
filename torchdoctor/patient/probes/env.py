"""The ``env`` probe: the versions and devices every bug report is asked for first."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import torch

from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.devices import mps_available
from torchdoctor.patient.probes import probe, result
from torchdoctor.patient.probes._errors import never_raises

_ENV_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "TORCHDOCTOR_DEVICE",
             "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS")


@probe("env")
@never_raises
def env(ctx: ProbeContext) -> dict:
    cuda_available = torch.cuda.is_available()
    devices: list[dict[str, Any]] = [{"name": "cpu", "type": "cpu",
                                      "threads": torch.get_num_threads()}]
    if cuda_available:
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append({
                "name": props.name,
                "type": "cuda",
                "index": index,
                "memory_bytes": int(props.total_memory),
                "capability": f"{props.major}.{props.minor}",
            })
    cudnn = torch.backends.cudnn.version() if cuda_available else None
    facts = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "devices": devices,
        "cuda_available": cuda_available,
        "mps_available": mps_available(),
        "env_vars": {name: os.environ[name] for name in _ENV_VARS if name in os.environ},
    }
    gpus = [d["name"] for d in devices if d["type"] == "cuda"]
    summary = (f"torch {torch.__version__}, Python {facts['python']}, {facts['os']}; "
               + (f"CUDA {torch.version.cuda} on {', '.join(gpus)}" if gpus else "no CUDA device"))
    return result("pass", summary, facts)
