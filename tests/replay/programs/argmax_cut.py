"""Regression on class indices: argmax turns the scores into integers, and the loss
built from them has no history back to the model."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(4, 8), torch.rand(4)
    scores = model(x)
    picked = scores.argmax(dim=1)  # FIX
    predicted = picked.float() / 4.0
    loss = (predicted - y).abs().mean()
    optimizer.zero_grad()
    loss.backward()  # RAISES
    optimizer.step()
