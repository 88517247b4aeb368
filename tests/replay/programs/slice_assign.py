"""A feature mixer that zeroes its first channel by slice assignment after tanh."""

import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        h = torch.tanh(self.proj(x))
        h[:, 0] = 0  # FIX: writes into the output tanh saved
        return h.sum(1)


torch.manual_seed(0)
model = Mixer()
x = torch.randn(5, 6)
model(x).mean().backward()  # RAISES
