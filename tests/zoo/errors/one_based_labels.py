"""A tiny MLP on tabular data whose labels were read from a CSV numbered 1..10.

CrossEntropyLoss wants class indices 0..9, so label 10 is out of bounds.
Run: python one_based_labels.py  ->  IndexError: Target 10 is out of bounds.
"""

import torch
from torch import nn


class TabularMLP(nn.Module):
    def __init__(self, features=20, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x):
        return self.net(x)


def load_rows(count=32):
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(count, 20, generator=generator)
    grades = torch.randint(1, 11, (count,), generator=generator)  # BUG: classes numbered 1..10
    grades[0] = 10
    return features, grades


def harness():
    torch.manual_seed(0)
    model = TabularMLP()
    return {"model": model, "batch": load_rows(), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def main():
    parts = harness()
    model, (features, grades) = parts["model"], parts["batch"]
    loss = parts["loss_fn"](model(features), grades)  # RAISES
    loss.backward()
    parts["optimizer"].step()


if __name__ == "__main__":
    main()
