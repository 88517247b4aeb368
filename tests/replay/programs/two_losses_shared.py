"""Two heads on one trunk, each loss given its own backward."""

import torch
from torch import nn

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
head_a, head_b = nn.Linear(8, 1), nn.Linear(8, 1)
features = trunk(torch.randn(5, 4))
loss_a = head_a(features).pow(2).mean()
loss_b = head_b(features).pow(2).mean()
loss_a.backward()
loss_b.backward()  # RAISES
