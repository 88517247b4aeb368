"""Bug: the classifier returns probabilities, then CrossEntropyLoss applies log_softmax again."""

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.head = nn.Linear(32, 6)

    def forward(self, x):
        return F.softmax(self.head(self.body(x)), dim=1)  # BUG: CrossEntropyLoss wants logits


def harness():
    torch.manual_seed(0)
    model = Classifier()
    return {
        "model": model,
        "batch": (torch.randn(32, 12), torch.randint(0, 6, (32,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "num_classes": 6,
    }
