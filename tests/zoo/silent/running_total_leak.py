"""Bug: the step adds each loss tensor to a running total kept in its closure.

The total is a tensor, so each step's graph is chained onto the previous one
and none of them is ever freed.
"""

import torch
from torch import nn


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    total = 0.0

    def train_step(model, batch, loss_fn, optimizer):
        nonlocal total
        inputs, targets = batch
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss  # BUG: should be loss.item()
        return loss.item()

    return {
        "model": model,
        "batch": (torch.randn(32, 16), torch.randint(0, 4, (32,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.01),
        "train_step": train_step,
        "num_classes": 4,
    }
