"""An MLP whose labels come out of a float feature matrix (the last column of a CSV).

CrossEntropyLoss needs int64 class indices; slicing the label column off a
float tensor leaves them float32.
Run: python float_labels.py  ->  RuntimeError: expected target dtype to be Long or Byte, but got Float
"""

import torch
from torch import nn


class IrisNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def load_table(rows=30):
    generator = torch.Generator().manual_seed(2)
    table = torch.cat([torch.randn(rows, 4, generator=generator),
                       torch.randint(0, 3, (rows, 1), generator=generator).float()], dim=1)
    features, labels = table[:, :4], table[:, 4]  # BUG: labels stay float32
    return features, labels


def harness():
    torch.manual_seed(0)
    model = IrisNet()
    return {"model": model, "batch": load_table(), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def main():
    parts = harness()
    model, (features, labels) = parts["model"], parts["batch"]
    loss = parts["loss_fn"](model(features), labels)  # RAISES
    loss.backward()


if __name__ == "__main__":
    main()
