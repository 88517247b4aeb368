"""Bug: an iterable dataset streams every record in each DataLoader worker, so an epoch
with two workers holds the data twice."""

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset


class Records(IterableDataset):
    def __init__(self, features, labels):
        self.features, self.labels = features, labels

    def __iter__(self):  # BUG: never splits the stream by get_worker_info()
        for x, y in zip(self.features, self.labels):
            yield x, y


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    features, labels = torch.randn(64, 12), torch.randint(0, 3, (64,))
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
    loader = DataLoader(Records(features, labels), batch_size=8, num_workers=2)
    return {
        "model": model,
        "batch": (features[:8], labels[:8]),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "train_step": train_step,
        "loader": loader,
        "num_classes": 3,
    }
