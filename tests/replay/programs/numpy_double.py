"""Features read from a numpy array keep numpy's float64 into a float32 model."""

import numpy as np
import torch
from torch import nn

rng = np.random.default_rng(0)
table = rng.normal(size=(32, 6))
labels = rng.integers(0, 3, size=32)

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
features = torch.from_numpy(table)  # FIX: float64, like the array
targets = torch.from_numpy(labels)
scaled = (features - features.mean(0)) / features.std(0)
logits = model(scaled)  # RAISES
loss = nn.functional.cross_entropy(logits, targets)
