"""Sequences encoded per batch and reshaped with the batch size as a constant."""

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
BATCH, STEPS, FEATURES = 4, 3, 5
dataset = TensorDataset(torch.randn(10, STEPS * FEATURES))
loader = DataLoader(dataset, batch_size=BATCH, shuffle=True)  # FIX: keeps a last batch of 2
encoder = torch.nn.Linear(STEPS * FEATURES, STEPS * FEATURES)
for (rows,) in loader:
    codes = encoder(rows)
    sequences = codes.view(BATCH, STEPS, FEATURES)  # RAISES
