"""Bug: the loop keeps every loss tensor, and with it every step's autograd graph."""

import torch
from torch import nn

losses = []


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    losses.append(loss)  # BUG: should be loss.item()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    return {
        "model": model,
        "batch": (torch.randn(64, 64), torch.randint(0, 10, (64,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.01),
        "train_step": train_step,
        "num_classes": 10,
    }
