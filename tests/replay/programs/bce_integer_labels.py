"""A discriminator trained with BCE on labels filled from an integer constant."""

import torch
from torch import nn

REAL = 1
disc = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
criterion = nn.BCELoss()
images = torch.randn(5, 6)
labels = torch.full((images.size(0),), REAL)  # FIX
scores = disc(images).view(-1)
loss = criterion(scores, labels)  # RAISES
loss.backward()
