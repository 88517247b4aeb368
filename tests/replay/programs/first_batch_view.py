"""A reshape whose constant is wrong for every batch, the first one included."""

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
dataset = TensorDataset(torch.randn(10, 15))
loader = DataLoader(dataset, batch_size=4, shuffle=True)
encoder = torch.nn.Linear(15, 15)
for (rows,) in loader:
    codes = encoder(rows)
    sequences = codes.view(5, 3, 5)  # RAISES
