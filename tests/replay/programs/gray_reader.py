"""Grayscale scans read as (H, W, 1) arrays and fed to a network built for colour images."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

rng = np.random.default_rng(0)
SCANS = [rng.integers(0, 256, (16, 16), dtype=np.uint8) for _ in range(6)]


def read_scan(stored):
    scan = stored.astype(np.float32) / 255.0
    return scan[:, :, None]  # FIX: keeps one channel; the network wants three


class Scans(Dataset):
    def __len__(self):
        return len(SCANS)

    def __getitem__(self, i):
        return torch.from_numpy(read_scan(SCANS[i]).transpose(2, 0, 1).copy())


model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
for scans in DataLoader(Scans(), batch_size=3):
    features = model(scans)  # RAISES
