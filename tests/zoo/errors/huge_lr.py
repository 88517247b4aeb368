"""A house-price regressor trained with a learning rate a thousand times too large.

Each SGD step overshoots further; within a few steps the weights blow up to
inf and the loss turns NaN.
Run: python huge_lr.py  ->  FloatingPointError: loss became nan at step N
"""

import torch
from torch import nn


class PriceModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(1)


def load_batch():
    generator = torch.Generator().manual_seed(4)
    features = torch.randn(64, 8, generator=generator)
    prices = features @ torch.linspace(1, 3, 8) * 10 + 50
    return features, prices


def harness():
    torch.manual_seed(0)
    model = PriceModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)  # BUG: should be about 1e-3
    return {"model": model, "batch": load_batch(), "loss_fn": nn.MSELoss(),
            "optimizer": optimizer}


def main():
    parts = harness()
    model, optimizer, loss_fn = parts["model"], parts["optimizer"], parts["loss_fn"]
    features, prices = parts["batch"]
    for step in range(1, 201):
        optimizer.zero_grad()
        loss = loss_fn(model(features), prices)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}")
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
