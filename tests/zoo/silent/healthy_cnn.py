"""Healthy: a small CNN with batch norm on 16x16 single-channel images."""

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(),
                                        nn.Linear(32, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def train_step(model, batch, loss_fn, optimizer):
    images, labels = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss.detach()


def harness():
    torch.manual_seed(0)
    model = SmallCNN()
    return {
        "model": model,
        "batch": (torch.randn(32, 1, 16, 16), torch.randint(0, 10, (32,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=3e-3),
        "train_step": train_step,
        "num_classes": 10,
    }
