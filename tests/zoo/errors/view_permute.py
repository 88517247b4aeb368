"""A sequence model that swaps time and channel axes, then flattens with view.

``permute`` returns a non-contiguous view; ``view`` cannot merge its axes.
Run: python view_permute.py  ->  RuntimeError: view size is not compatible with
input tensor's size and stride
"""

import torch
from torch import nn


class SeqNet(nn.Module):
    def __init__(self, channels=8, steps=20, num_classes=5):
        super().__init__()
        self.conv = nn.Conv1d(channels, 16, 3, padding=1)
        self.head = nn.Linear(16 * steps, num_classes)

    def forward(self, x):
        x = self.conv(x)  # (batch, 16, steps)
        x = x.permute(0, 2, 1)  # (batch, steps, 16) for a time-major head
        x = x.view(x.size(0), -1)  # BUG: view on a non-contiguous tensor
        return self.head(x)


def harness():
    torch.manual_seed(0)
    model = SeqNet()
    signals = torch.randn(4, 8, 20)
    labels = torch.randint(0, 5, (4,))
    return {"model": model, "batch": (signals, labels), "loss_fn": nn.CrossEntropyLoss()}


def main():
    parts = harness()
    signals, labels = parts["batch"]
    parts["loss_fn"](parts["model"](signals), labels).backward()


if __name__ == "__main__":
    main()
