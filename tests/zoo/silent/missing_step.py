"""Bug: the loop computes gradients but never calls optimizer.step()."""

import torch
from torch import nn


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()  # BUG: optimizer.step() is missing after this
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
    return {
        "model": model,
        "batch": (torch.randn(24, 16), torch.randint(0, 3, (24,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "train_step": train_step,
        "num_classes": 3,
    }
