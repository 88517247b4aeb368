"""Healthy: a small MLP classifier with a correct loop and a shuffled loader."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 5))
    inputs, targets = torch.randn(32, 20), torch.randint(0, 5, (32,))
    dataset = TensorDataset(torch.randn(128, 20), torch.randint(0, 5, (128,)))
    return {
        "model": model,
        "batch": (inputs, targets),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-2),
        "train_step": train_step,
        "loader": DataLoader(dataset, batch_size=16, shuffle=True),
        "num_classes": 5,
    }
