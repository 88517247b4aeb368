"""A CNN built for grayscale digits, fed RGB CIFAR-like images.

The first convolution expects 1 input channel; the images have 3.
Run: python wrong_channels.py  ->  RuntimeError: Given groups=1, weight of size
[16, 1, 3, 3], expected input[8, 3, 32, 32] to have 1 channels, but got 3 channels instead
"""

import torch
from torch import nn


class DigitNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3)  # BUG: the images are RGB
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))  # RAISES
        return self.fc(self.pool(x).flatten(1))


def harness():
    torch.manual_seed(0)
    model = DigitNet()
    images = torch.rand(8, 3, 32, 32)
    labels = torch.randint(0, 10, (8,))
    return {"model": model, "batch": (images, labels), "loss_fn": nn.CrossEntropyLoss()}


def main():
    parts = harness()
    images, labels = parts["batch"]
    parts["loss_fn"](parts["model"](images), labels).backward()


if __name__ == "__main__":
    main()
