"""Labels that match their inputs, but a head initialised with weights fifty times too large.

The loss at init is far above ln C because the logits are mis-scaled, not
because the labels are wrong: the class is learnable from the inputs.
"""

import torch
from torch import nn


def train_step(model, batch, loss_fn, optimizer):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def harness():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    with torch.no_grad():
        model[2].weight.mul_(50.0)  # BUG
    inputs = torch.randn(32, 20)
    targets = inputs[:, :5].argmax(dim=1)
    return {
        "model": model,
        "batch": (inputs, targets),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "train_step": train_step,
        "num_classes": 5,
    }
