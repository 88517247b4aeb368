"""A training loss computed inside the validation helper's no_grad block."""

import torch
from torch import nn

model = nn.Linear(8, 1)


@torch.no_grad()
def predict(batch):
    return model(batch)


x, y = torch.randn(4, 8), torch.randn(4, 1)
loss = ((predict(x) - y) ** 2).mean()
loss.backward()  # RAISES
