"""Bug: the optimizer was built before a new head was attached, so the head never trains."""

import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 32), nn.Tanh())
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


def harness():
    torch.manual_seed(0)
    model = Regressor()
    optimizer = torch.optim.SGD(model.backbone.parameters(), lr=0.05)  # BUG: head left out
    return {
        "model": model,
        "batch": (torch.randn(32, 10), torch.randn(32, 1)),
        "loss_fn": nn.MSELoss(),
        "optimizer": optimizer,
    }
