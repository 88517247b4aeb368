"""Regression targets flattened with view(1, -1), which merges the whole batch into one row."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(16, 6))
criterion = nn.MSELoss()
images = torch.randn(8, 1, 4, 4)
points = torch.randn(8, 3, 2)
points = points.view(1, -1)  # FIX: one row for the batch instead of one per sample
loss = criterion(model(images), points)  # RAISES
