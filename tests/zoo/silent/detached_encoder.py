"""Bug: the encoder's output is detached, so the encoder never receives a gradient."""

import torch
from torch import nn


class AutoTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 24), nn.ReLU())
        self.head = nn.Linear(24, 4)

    def forward(self, x):
        features = self.encoder(x).detach()  # BUG: cuts the graph to the encoder
        return self.head(features)


def harness():
    torch.manual_seed(0)
    model = AutoTagger()
    return {
        "model": model,
        "batch": (torch.randn(16, 24), torch.randint(0, 4, (16,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "num_classes": 4,
    }
