"""Benchmark: what recording the failing run costs, and what the first run does not pay.

Targets (issue 10, "Figures"): a training step of the README's harness CNN
under the recorder takes at most 2x the bare step's time and 1.5x its peak
memory; the ring keeps memory bounded on a 10,000-step script; the first,
unrecorded run of a script (under the patient's light call watch) takes at
most 1.05x plain Python. Every figure is measured in this one invocation;
each measurement runs in its own subprocess, so a peak belongs to one run.
Peak memory is the growth of peak RSS over the RSS before the first step
(torch itself, the model and the batch are not the step's cost).
Run: ``python tests/perf/bench_recorder.py [--steps N] [--long N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, resource, runpy, sys, tempfile, time
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

class SmallNet(nn.Module):  # the README's harness CNN
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 16 * 16, num_classes)
    def forward(self, x):
        return self.head(self.features(x).flatten(1))

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

what, steps = sys.argv[1], int(sys.argv[2])
from torchdoctor.patient.recorder.recorder import Recorder

if what in ("bare", "recorded"):
    model = SmallNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    base = rss_kib()
    times = []
    recorder = Recorder() if what == "recorded" else None
    if recorder is not None:
        recorder.__enter__()
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    if recorder is not None:
        recorder.__exit__(None, None, None)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times.sort()
    print(json.dumps({"seconds": times[len(times) // 2], "growth_kib": peak - base,
                      "recorded": recorder.recorded if recorder else 0}))

elif what == "long":
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    samples = {}
    with Recorder() as recorder:
        for i in range(1, steps + 1):
            opt.zero_grad()
            model(torch.randn(8, 16)).pow(2).mean().backward()
            opt.step()
            if i in (steps // 5, steps):
                samples[i] = rss_kib()
    first, last = samples[steps // 5], samples[steps]
    print(json.dumps({"rss_at": samples, "growth_kib": last - first,
                      "kept": len(recorder.events), "ring": recorder.ring,
                      "recorded": recorder.recorded}))

else:  # "first_run": one training script, run as python runs it and as the patient does
    script = os.path.join(tempfile.mkdtemp(), "train.py")
    with open(script, "w") as f:
        f.write(
            "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
            "model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),"
            " nn.Flatten(), nn.Linear(16 * 16 * 16, 10))\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
            "x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))\n"
            f"for _ in range({steps}):\n"
            "    opt.zero_grad()\n"
            "    nn.functional.cross_entropy(model(x), y).backward()\n"
            "    opt.step()\n")
    from torchdoctor.patient import targets
    best = {"plain": None, "first_run": None}
    for _ in range(5):  # alternated, so a busy machine slows both alike
        for kind in best:
            start = time.perf_counter()
            if kind == "plain":
                runpy.run_path(script, run_name="__main__")
            else:
                targets.run_script(script, [])
            seconds = time.perf_counter() - start
            best[kind] = seconds if best[kind] is None else min(best[kind], seconds)
    print(json.dumps(best))
"""


def measure(what: str, steps: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", CHILD, what, str(steps)], check=False,
                          capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), **env})
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps timed per CNN run")
    parser.add_argument("--long", type=int, default=10_000, help="steps of the long script")
    args = parser.parse_args()
    ok = True

    bare, recorded = measure("bare", args.steps), measure("recorded", args.steps)
    time_ratio = recorded["seconds"] / bare["seconds"]
    memory_ratio = max(recorded["growth_kib"], 1) / max(bare["growth_kib"], 1)
    ok &= time_ratio <= 2.0 and memory_ratio <= 1.5
    print(f"README CNN step, batch 32x3x32x32, median of {args.steps} (1 CPU thread)")
    print(f"  bare      {bare['seconds'] * 1e3:.2f} ms  peak growth {bare['growth_kib']} KiB")
    print(f"  recorded  {recorded['seconds'] * 1e3:.2f} ms  peak growth"
          f" {recorded['growth_kib']} KiB  ({recorded['recorded']} events)")
    print(f"  ratio: time {time_ratio:.2f}x (target <= 2x), peak memory {memory_ratio:.2f}x"
          " (target <= 1.5x)")

    long = measure("long", args.long)
    bounded = long["kept"] <= long["ring"] and long["growth_kib"] <= 2048
    ok &= bounded
    print(f"{args.long}-step script under the recorder: {long['recorded']} events, ring keeps"
          f" {long['kept']} of {long['ring']}; RSS {long['rss_at']} KiB, growth over the last"
          f" 80% {long['growth_kib']} KiB (target: bounded, <= 2048 KiB)")

    pair = measure("first_run", 60)
    first_ratio = pair["first_run"] / pair["plain"]
    ok &= first_ratio <= 1.05
    print(f"first, unrecorded run of a 60-step script (best of 5 each, alternated): plain"
          f" {pair['plain']:.3f} s, as the patient runs it {pair['first_run']:.3f} s, ratio"
          f" {first_ratio:.3f}x (target <= 1.05x)")
    print("targets met" if ok else "targets NOT met")


if __name__ == "__main__":
    main()
