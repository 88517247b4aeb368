"""Healthy: contrastive logits, a batch-by-batch similarity of two 8-wide embeddings.

The model's last Linear is 8 wide, but its logits have one column per sample
of the batch (32), and the targets index those columns.
"""

import torch
import torch.nn.functional as F
from torch import nn


class PairEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))
        self.key = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, x):
        q, k = F.normalize(self.query(x), dim=1), F.normalize(self.key(x), dim=1)
        return q @ k.t() / 0.5


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = PairEncoder()
    return {
        "model": model,
        "batch": (torch.randn(32, 12), torch.arange(32)),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "train_step": train_step,
    }
