"""Images with text labels of 4 or 5 characters, each label turned into a tensor of its own length."""

import torch
from torch.utils.data import DataLoader, Dataset

WORDS = ["abcd", "bcde", "cdefg", "defg", "efgh", "fghij"]


class Words(Dataset):
    def __len__(self):
        return len(WORDS)

    def __getitem__(self, i):
        image = torch.zeros(1, 8, 32)
        label = torch.tensor([ord(c) - 96 for c in WORDS[i]])  # FIX: pad to one length
        return image, label


for images, labels in DataLoader(Words(), batch_size=3):  # RAISES
    print(images.shape, labels.shape)
