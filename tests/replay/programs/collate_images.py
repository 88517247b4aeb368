"""Photos of two sizes, returned as they were read, batched by the default collate."""

import torch
from torch.utils.data import DataLoader, Dataset


class Photos(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.sizes = [(32, 32)] * 5 + [(48, 40)] + [(32, 32)] * 2
        self.pixels = [torch.rand(3, h, w, generator=g) for h, w in self.sizes]

    def __len__(self):
        return len(self.pixels)

    def __getitem__(self, i):
        image = self.pixels[i] * 2 - 1  # FIX: no resize to one size
        label = i % 3
        return {"image": image, "label": label}


for batch in DataLoader(Photos(), batch_size=4):  # RAISES
    print(batch["image"].shape)
