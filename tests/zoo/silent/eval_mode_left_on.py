"""Bug: a progress helper switches the model to eval mode and never switches it back."""

import torch
from torch import nn


def log_accuracy(model, batch):
    inputs, targets = batch
    model.eval()  # BUG: never followed by model.train()
    with torch.no_grad():
        accuracy = (model(inputs).argmax(1) == targets).float().mean().item()
    return accuracy


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    log_accuracy(model, batch)
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(32, 3))
    return {
        "model": model,
        "batch": (torch.randn(24, 16), torch.randint(0, 3, (24,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "train_step": train_step,
        "num_classes": 3,
    }
