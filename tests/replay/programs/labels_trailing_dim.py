"""Class labels stored as a (batch, 1) column and cast inside the loss wrapper."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))
criterion = nn.CrossEntropyLoss()


def task_loss(output, labels):
    labels = labels.long()  # FIX
    return criterion(output, labels)  # RAISES


features, labels = torch.randn(6, 10), torch.randint(0, 2, (6, 1)).float()
loss = task_loss(model(features), labels)
loss.backward()
