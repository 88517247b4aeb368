"""Bug: a dataset holding a lambda, loaded by spawn-started workers that must pickle it."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Readings(Dataset):
    def __init__(self, transform):
        self.data = torch.randn(64, 8)
        self.labels = torch.randint(0, 2, (64,))
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.transform(self.data[index]), self.labels[index]


def harness():
    torch.manual_seed(0)
    dataset = Readings(transform=lambda x: (x - x.mean()) / (x.std() + 1e-6))  # BUG
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2,
                        multiprocessing_context="spawn")
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    return {
        "model": model,
        "batch": next(iter(DataLoader(dataset, batch_size=8))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "loader": loader,
        "num_classes": 2,
    }
