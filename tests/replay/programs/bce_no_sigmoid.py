"""A binary classifier whose raw scores go to BCELoss, which wants probabilities."""

import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.body(x))  # FIX: raw scores, no sigmoid


torch.manual_seed(0)
model = Scorer()
criterion = nn.BCELoss()
x = torch.randn(16, 10)
y = (torch.rand(16, 1) > 0.5).float()
scores = model(x)
loss = criterion(scores, y)  # RAISES
loss.backward()
