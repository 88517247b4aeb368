"""Bug: gradients are never cleared, so every step adds to the last one's."""

import torch
from torch import nn


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    loss = loss_fn(model(inputs), targets)
    loss.backward()  # BUG: no optimizer.zero_grad() before this
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
    return {
        "model": model,
        "batch": (torch.randn(24, 16), torch.randint(0, 3, (24,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
        "train_step": train_step,
        "num_classes": 3,
    }
