"""A network's children called one by one, walking on past its features into its classifier."""

import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(8 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


net = Net()
x = torch.rand(1, 3, 16, 16)
for layer in net.children():
    x = layer(x)  # RAISES
