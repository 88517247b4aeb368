"""Bug: zero_grad() sits between backward() and step(), so every step finds no gradients."""

import torch
from torch import nn


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.zero_grad()  # BUG: clears the gradients the step is about to use
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))
    return {
        "model": model,
        "batch": (torch.randn(40, 12), torch.randint(0, 4, (40,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "train_step": train_step,
        "num_classes": 4,
    }
