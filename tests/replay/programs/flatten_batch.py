"""A small CNN whose Sequential flattens from dimension 0, merging the batch."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 4, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(0),  # FIX: start_dim 0 merges the batch into the features
    nn.Linear(4 * 7 * 7, 10),
)
images = torch.randn(8, 1, 14, 14)
labels = torch.randint(0, 10, (8,))
logits = model(images)  # RAISES
loss = nn.functional.cross_entropy(logits, labels)
