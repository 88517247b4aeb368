"""Variable-length token sequences batched by the default collate, which stacks them."""

import torch
from torch.utils.data import DataLoader, Dataset


class Sentences(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.lengths = [12, 12, 12, 9, 12, 12, 15, 12]
        self.items = [torch.randint(1, 100, (n,), generator=g) for n in self.lengths]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i], i % 2


loader = DataLoader(Sentences(), batch_size=8)  # FIX: needs a collate_fn that pads
for tokens, labels in loader:  # RAISES
    print(tokens.shape)
