"""Bug: a hand-written binary cross-entropy takes log(0) once the sigmoid saturates."""

import torch
from torch import nn


def bce_loss(probs, targets):
    return -(targets * torch.log(probs) + (1 - targets) * torch.log(1 - probs)).mean()  # BUG


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    pixels = torch.randint(0, 256, (32, 6)).float()  # unnormalised: the sigmoid saturates
    return {
        "model": model,
        "batch": (pixels, torch.randint(0, 2, (32, 1)).float()),
        "loss_fn": bce_loss,
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.01),
    }
