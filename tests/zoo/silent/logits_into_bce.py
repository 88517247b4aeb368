"""Bug: a binary classifier emits raw logits but the loss is BCELoss, not BCEWithLogitsLoss."""

import torch
from torch import nn


class SpamFilter(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(30, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)  # BUG: no sigmoid, yet the loss is BCELoss

    def forward(self, x):
        return self.head(self.body(x))


def harness():
    torch.manual_seed(0)
    model = SpamFilter()
    return {
        "model": model,
        "batch": (torch.randn(20, 30) * 3, torch.randint(0, 2, (20, 1)).float()),
        "loss_fn": nn.BCELoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
    }
