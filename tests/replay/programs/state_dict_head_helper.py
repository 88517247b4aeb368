"""Evaluation script: a model built for the wrong class count, loaded by a helper."""

import os
import tempfile

import torch
from torch import nn

SAVED = os.path.join(tempfile.mkdtemp(), "net.pth")


class Net(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.classifier = nn.Linear(32, classes)

    def forward(self, x):
        return self.classifier(self.body(x))


def load_weights(network):
    network.load_state_dict(torch.load(SAVED))  # RAISES
    return network


torch.save(Net(12).state_dict(), SAVED)
structure = Net(40)  # FIX
model = load_weights(structure)
print(model(torch.randn(2, 16)).shape)
