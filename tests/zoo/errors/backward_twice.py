"""A two-headed model trained with one backward per head over a shared trunk.

The first ``backward()`` frees the trunk's saved tensors; the second head's
backward then walks into the freed part of the graph.
Run: python backward_twice.py  ->  RuntimeError: Trying to backward through the
graph a second time
"""

import torch
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 32), nn.Tanh())
        self.classify = nn.Linear(32, 3)
        self.regress = nn.Linear(32, 1)

    def forward(self, x):
        shared = self.trunk(x)  # SHARED
        return self.classify(shared), self.regress(shared)


def two_loss_step(model, batch, loss_fn, optimizer):
    inputs, (classes, values) = batch
    optimizer.zero_grad()
    logits, predicted = model(inputs)
    loss_fn(logits, classes).backward()
    nn.functional.mse_loss(predicted.squeeze(1), values).backward()  # BUG: graph already freed
    optimizer.step()


def harness():
    torch.manual_seed(0)
    model = TwoHeads()
    inputs = torch.randn(8, 16)
    targets = (torch.randint(0, 3, (8,)), torch.randn(8))
    return {"model": model, "batch": (inputs, targets), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "train_step": two_loss_step}


def main():
    parts = harness()
    two_loss_step(parts["model"], parts["batch"], parts["loss_fn"], parts["optimizer"])


if __name__ == "__main__":
    main()
