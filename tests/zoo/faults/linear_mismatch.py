"""A small CNN whose Linear was sized for 32x32 images, fed 64x64 ones."""
import sys

import torch
from torch import nn


class SeqNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(16 * 15 * 15, 10)

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)
        return self.fc(x)


def train(steps):
    model = SeqNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        images = torch.randn(8, 3, 64, 64)
        labels = torch.randint(0, 10, (8,))
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    print("argv:", sys.argv[1:])
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
