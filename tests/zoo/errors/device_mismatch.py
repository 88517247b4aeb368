"""A model moved to the GPU while the batch stays on the CPU (needs CUDA to fail).

Run: python device_mismatch.py  ->  RuntimeError: Expected all tensors to be on
the same device (on a machine with CUDA); on a CPU-only machine it runs clean.
"""

import torch
from torch import nn


def harness():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    inputs = torch.randn(4, 10)  # BUG: never moved to the model's device
    labels = torch.randint(0, 2, (4,))
    return {"model": model, "batch": (inputs, labels), "loss_fn": nn.CrossEntropyLoss()}


def main():
    parts = harness()
    inputs, labels = parts["batch"]
    parts["loss_fn"](parts["model"](inputs), labels).backward()  # RAISES


if __name__ == "__main__":
    main()
