"""Benchmark: ``trace`` and ``first_nonfinite`` versus one bare forward of a ResNet-18.

Targets (issue "The patient", speed and memory): each probe costs at most
1.5x the time and 1.3x the peak memory of a bare forward pass, because the
probes keep statistics, not tensors. Each measurement runs in its own
subprocess so peak RSS (``resource.getrusage``) belongs to that run alone;
the figure is the whole process's peak RSS (torch, the model and the run),
compared between a bare-forward process and a probe process. Run: ``python tests/perf/bench_probes.py [--batch N] [--size PX]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, resource, sys, time
import torch
from torch import nn

def block(cin, cout, stride):
    class Basic(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))
        def forward(self, x):
            identity = x if self.down is None else self.down(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)
    return Basic()

def resnet18(classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [block(cin, cout, stride), block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)

what, batch, size, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
torch.set_num_threads(max(1, torch.get_num_threads()))
model = resnet18()
inputs = torch.randn(batch, 3, size, size)
from torchdoctor.patient.context import ProbeContext
from torchdoctor.patient.probes import run_probe, load_all
load_all()
ctx = ProbeContext(model=model, batch=(inputs, None))

def once():
    if what == "bare":
        with torch.no_grad() if "nograd" in sys.argv else torch.enable_grad():
            out = model(inputs)
        del out
        return "pass"
    return run_probe(what, ctx, {"backward": False} if what == "trace" else {})["status"]

once()  # warm-up: allocator, kernels, lazy imports
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(repeats):
    start = time.perf_counter()
    status = once()
    times.append(time.perf_counter() - start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"what": what, "status": status, "seconds": min(times),
                  "peak_kib": peak, "base_kib": base}))
"""


def measure(what: str, batch: int, size: int, repeats: int, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, what, str(batch), str(size),
                           str(repeats), *extra], check=False, capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), **_env()})
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # trace runs the forward with autograd on (as the user's step would); first_nonfinite
    # runs it under no_grad, so each is compared with the bare forward of the same kind.
    runs = [("trace", "bare (grad)", ()), ("first_nonfinite", "bare (no_grad)", ("nograd",))]
    print(f"ResNet-18 on CPU, batch {args.batch}x3x{args.size}x{args.size}, "
          f"best of {args.repeats}")
    ok = True
    for probe_name, bare_label, extra in runs:
        bare = measure("bare", args.batch, args.size, args.repeats, *extra)
        probed = measure(probe_name, args.batch, args.size, args.repeats)
        time_ratio = probed["seconds"] / bare["seconds"]
        memory_ratio = probed["peak_kib"] / bare["peak_kib"]
        ok &= time_ratio <= 1.5 and memory_ratio <= 1.3
        print(f"  {bare_label:16s} {bare['seconds']:.3f} s  peak RSS {bare['peak_kib'] / 1024:.0f} MiB")
        print(f"  {probe_name:16s} {probed['seconds']:.3f} s  peak RSS "
              f"{probed['peak_kib'] / 1024:.0f} MiB  (status {probed['status']})")
        print(f"  ratio: time {time_ratio:.2f}x (target <= 1.5x), "
              f"peak memory {memory_ratio:.2f}x (target <= 1.3x)")
    print("targets met" if ok else "targets NOT met")


if __name__ == "__main__":
    main()
