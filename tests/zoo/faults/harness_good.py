import torch
from torch import nn


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    inputs = torch.randn(4, 8)
    targets = torch.tensor([0, 2, 1, 2])
    return {
        "model": model,
        "batch": (inputs, targets),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "num_classes": 3,
    }
