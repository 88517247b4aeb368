"""Bug: a learning rate far too high for unnormalised targets: the loss explodes to NaN."""

import torch
from torch import nn


def harness():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    prices = torch.rand(64, 8) * 100
    targets = prices.sum(dim=1, keepdim=True) * 10
    return {
        "model": model,
        "batch": (prices, targets),
        "loss_fn": nn.MSELoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.01),  # BUG: lr far too high
    }
