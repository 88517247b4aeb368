"""Multi-image super-resolution: up to 24 low-resolution frames per scene fused into one HR image."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)
N_FRAMES = 24


def read_scene(index):
    """Frames as stored on disk: most scenes are landscape, a few portrait."""
    height, width = (64, 32) if index % 5 == 1 else (32, 64)
    n = int(rng.integers(16, N_FRAMES + 1))
    lr = rng.random((n, height, width)).astype(np.float32)
    hr = rng.random((height * 3, width * 3)).astype(np.float32)
    return lr, hr


class ImageSet(Dataset):
    def __init__(self, n_scenes=40):
        self.scenes = [read_scene(i) for i in range(n_scenes)]

    def __len__(self):
        return len(self.scenes)

    def __getitem__(self, index):
        lr, hr = self.scenes[index]
        return {"lr": torch.from_numpy(lr), "hr": torch.from_numpy(hr)}


class CollateFunction:
    def __init__(self, min_frames=N_FRAMES):
        self.min_frames = min_frames

    def __call__(self, batch):
        return self.collateFunction(batch)

    def collateFunction(self, batch):
        lr_batch, alpha_batch, hr_batch = [], [], []
        for imageset in batch:
            lrs = imageset["lr"]
            n, h, w = lrs.shape
            if n < self.min_frames:
                pad = torch.zeros(self.min_frames - n, h, w)
                lrs = torch.cat([lrs, pad], dim=0)
                alpha = torch.cat([torch.ones(n), torch.zeros(self.min_frames - n)])
            else:
                alpha = torch.ones(self.min_frames)
            lr_batch.append(lrs)
            alpha_batch.append(alpha)
            hr_batch.append(imageset["hr"])
        padded_lr_batch = torch.stack(lr_batch, dim=0)
        alpha_batch = torch.stack(alpha_batch, dim=0)
        hr_batch = torch.stack(hr_batch, dim=0)
        return padded_lr_batch, alpha_batch, hr_batch


class FusionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Conv2d(1, 16, 3, padding=1)
        self.decode = nn.Conv2d(16, 9, 3, padding=1)

    def forward(self, lrs, alphas):
        b, n, h, w = lrs.shape
        feats = F.relu(self.encode(lrs.reshape(b * n, 1, h, w))).view(b, n, 16, h, w)
        weights = alphas.view(b, n, 1, 1, 1)
        fused = (feats * weights).sum(1) / weights.sum(1)
        return F.pixel_shuffle(self.decode(fused), 3).squeeze(1)


loader = DataLoader(ImageSet(), batch_size=4, shuffle=False, collate_fn=CollateFunction())
model = FusionNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for lrs, alphas, hrs in loader:
        sr = model(lrs, alphas)
        loss = F.l1_loss(sr, hrs)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: l1 {loss.item():.4f}")
