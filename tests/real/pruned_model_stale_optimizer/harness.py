"""Fine-tuning a channel-pruned CNN after the pruned layers were replaced by smaller ones."""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def speedup_model(model, keep1=8):
    """Physically removes the masked output channels of conv1 (what ModelSpeedup does)."""
    kept = model.conv1.weight.detach().abs().sum((1, 2, 3)).argsort(descending=True)[:keep1]
    conv1 = nn.Conv2d(1, keep1, 3, padding=1)
    conv2 = nn.Conv2d(keep1, model.conv2.out_channels, 3, padding=1)
    with torch.no_grad():
        conv1.weight.copy_(model.conv1.weight[kept])
        conv1.bias.copy_(model.conv1.bias[kept])
        conv2.weight.copy_(model.conv2.weight[:, kept])
        conv2.bias.copy_(model.conv2.bias)
    model.conv1, model.conv2 = conv1, conv2
    return model


def train_step(model, batch, loss_fn, optimizer):
    data, target = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(data), target)
    loss.backward()
    optimizer.step()
    return loss


def make():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model = speedup_model(model)
    return {
        "model": model,
        "batch": (torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": optimizer,
        "train_step": train_step,
        "num_classes": 10,
    }
