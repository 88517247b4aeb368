"""A batch moved to another device than the model's (the meta device stands in for a
GPU on a machine without one): the move, not the layer, is the line to change."""

import torch
from torch import nn

device = torch.device("meta")
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
batch = torch.randn(3, 4)
batch = batch.to(device)  # FIX: the model stayed where it was built
scores = model(batch)  # RAISES
