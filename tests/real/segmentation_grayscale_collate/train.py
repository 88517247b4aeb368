"""Semantic segmentation (21 classes) of 200x200 photos read from an image folder."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)
NUM_CLASSES = 21

# The folder as the PIL loader would hand it over: most photos are RGB (H, W, 3),
# a few were saved as single-channel grayscale PNGs (H, W).
FOLDER = [
    rng.integers(0, 256, (200, 200), dtype=np.uint8) if i % 16 == 13
    else rng.integers(0, 256, (200, 200, 3), dtype=np.uint8)
    for i in range(64)
]
MASKS = [rng.integers(0, NUM_CLASSES, (200, 200), dtype=np.uint8) for _ in range(64)]


def to_tensor(array):
    tensor = torch.from_numpy(array).float() / 255.0
    if tensor.ndim == 2:
        return tensor.unsqueeze(0)
    return tensor.permute(2, 0, 1)


class SegmentationFolder(Dataset):
    def __len__(self):
        return len(FOLDER)

    def __getitem__(self, index):
        image = to_tensor(FOLDER[index])
        mask = torch.from_numpy(MASKS[index]).long()
        return {"input": image, "target": mask}


class TinySegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 16, 3, padding=1)
        self.enc2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.head = nn.Conv2d(32, NUM_CLASSES, 1)

    def forward(self, x):
        x = F.relu(self.enc1(x))
        x = F.relu(self.enc2(x))
        return F.interpolate(self.head(x), scale_factor=2, mode="bilinear", align_corners=False)


loader = DataLoader(SegmentationFolder(), batch_size=16, shuffle=False)
model = TinySegNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for batch in loader:
        logits = model(batch["input"])
        loss = criterion(logits, batch["target"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
