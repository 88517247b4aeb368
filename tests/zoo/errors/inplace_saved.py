"""A residual MLP block that shifts its activation in place to save memory.

ReLU saves its output for backward; ``x += self.shift`` then overwrites it,
so backward finds the saved tensor at version 1 instead of 0.
Run: python inplace_saved.py  ->  RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation
"""

import torch
from torch import nn


class ShiftedBlock(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.fc1 = nn.Linear(32, width)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(width, 10)
        self.shift = 0.5

    def forward(self, x):
        x = self.relu(self.fc1(x))  # SAVED
        x += self.shift  # BUG: modifies the tensor ReLU saved for backward
        return self.fc2(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = ShiftedBlock()

    def forward(self, x):
        return self.block(x)


def harness():
    torch.manual_seed(0)
    model = Model()
    inputs = torch.randn(8, 32)
    labels = torch.randint(0, 10, (8,))
    return {"model": model, "batch": (inputs, labels), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def main():
    parts = harness()
    model, (inputs, labels) = parts["model"], parts["batch"]
    loss = parts["loss_fn"](model(inputs), labels)
    loss.backward()  # RAISES


if __name__ == "__main__":
    main()
