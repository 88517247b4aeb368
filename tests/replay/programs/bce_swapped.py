"""A scorer trained with -1/+1 labels that reach BCELoss as its input."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1), nn.Sigmoid())
criterion = nn.BCELoss()
x = torch.randn(10, 6)
signs = torch.randint(0, 2, (10, 1)).float() * 2 - 1
probs = model(x)
loss = criterion(signs, probs)  # RAISES
