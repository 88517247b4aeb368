"""A recurrent cell whose hidden state is fed to the next window with its graph."""

import torch
from torch import nn

torch.manual_seed(0)
cell = nn.GRUCell(3, 6)
head = nn.Linear(6, 1)
optimizer = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
hidden = torch.zeros(2, 6)
for window in range(3):
    x, y = torch.randn(2, 3), torch.randn(2, 1)
    hidden = cell(x, hidden)  # FIX: hidden.detach() between windows
    loss = nn.functional.mse_loss(head(hidden), y)
    optimizer.zero_grad()
    loss.backward()  # RAISES
    optimizer.step()
