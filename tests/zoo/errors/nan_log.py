"""A binary classifier on raw 0..255 pixel features with a hand-written BCE loss.

Unnormalised inputs saturate the sigmoid to exactly 1.0 in float32, and the
hand-written loss takes log(1 - p) = log(0) = -inf; 0 * -inf is NaN.
Run: python nan_log.py  ->  FloatingPointError: loss is nan at step 0
"""

import torch
from torch import nn


class PixelClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc2(self.act(self.fc1(x)))).squeeze(1)


def binary_cross_entropy(p, y):
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()  # BUG: log(0) when p == 1


def load_batch():
    generator = torch.Generator().manual_seed(3)
    pixels = torch.randint(0, 256, (16, 64), generator=generator).float()  # not scaled to 0..1
    labels = torch.randint(0, 2, (16,), generator=generator).float()
    labels[:8] = 1.0
    return pixels, labels


def harness():
    torch.manual_seed(0)
    model = PixelClassifier()
    with torch.no_grad():
        model.fc2.bias.fill_(40.0)  # an over-confident head, as after a few bad steps
    return {"model": model, "batch": load_batch(), "loss_fn": binary_cross_entropy,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.01)}


def main():
    parts = harness()
    model, (pixels, labels) = parts["model"], parts["batch"]
    for step in range(3):
        parts["optimizer"].zero_grad()
        loss = parts["loss_fn"](model(pixels), labels)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
        loss.backward()
        parts["optimizer"].step()


if __name__ == "__main__":
    main()
