"""A CIFAR-sized CNN whose classifier was sized for MNIST-style 12x12 maps.

The first Linear was copied from the classic MNIST example (9216 = 64 x 12 x 12)
but on 3x32x32 images the features emit 64 x 30 x 30 = 57600 values per sample.
Run: python flatten_linear.py  ->  RuntimeError: mat1 and mat2 shapes cannot be multiplied
"""

import torch
from torch import nn


class SeqNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
        )
        self.classifier = nn.Sequential(
            nn.Linear(9216, 128),  # BUG: built for 64 x 12 x 12
            nn.ReLU(),
            nn.Linear(128, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)  # FLATTEN
        x = self.classifier(x)  # RAISES
        return x


def harness():
    torch.manual_seed(0)
    model = SeqNet()
    images = torch.randn(8, 3, 32, 32)
    labels = torch.randint(0, 10, (8,))
    return {"model": model, "batch": (images, labels), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.01), "num_classes": 10}


def main():
    parts = harness()
    model, (images, labels) = parts["model"], parts["batch"]
    optimizer, loss_fn = parts["optimizer"], parts["loss_fn"]
    for _ in range(2):
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
