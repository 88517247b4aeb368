"""Not a bug of training but of data: a dataset whose __getitem__ blocks (a stuck lock)."""

import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

_never_released = threading.Event()


class Stuck(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        _never_released.wait(120)  # BUG: waits on a lock no one releases
        return torch.zeros(4), 0


def harness():
    # Seeded: eight random points with random labels are not always separable by a
    # Linear, and a draw that is not would make the overfit check's answer a coin toss.
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    return {
        "model": model,
        "batch": (torch.randn(8, 4), torch.randint(0, 2, (8,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "loader": DataLoader(Stuck(), batch_size=4, shuffle=True),
    }
