"""Train wrapped in DataParallel, save the wrapper's state, load it into the bare model."""

import os
import tempfile

import torch
from torch import nn


def make():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


model = nn.DataParallel(make())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(4, 8)).pow(2).mean().backward()
    opt.step()
path = os.path.join(tempfile.mkdtemp(), "weights.pt")
torch.save(model.state_dict(), path)  # FIX: saves the wrapper's keys

fresh = make()
fresh.load_state_dict(torch.load(path))  # RAISES
