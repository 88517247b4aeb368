"""Binary classifier over three patch scales (16, 32, 48 px) whose output goes through a sigmoid."""

import torch
import torch.nn.functional as F
from torch import nn


def branch(out_ch=32):
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, out_ch, 3, padding=1), nn.BatchNorm2d(out_ch), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten())


class XceptionLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch_16 = branch(32)
        self.branch_32 = branch(32)
        self.branch_48 = branch(32)
        self.fc_last_1 = nn.Linear(96, 64)
        self.fc_last_2 = nn.Linear(64, 1)

    def forward(self, input_16, input_32, input_48):
        out = torch.cat([self.branch_16(input_16), self.branch_32(input_32),
                         self.branch_48(input_48)], dim=1)
        out = F.relu(self.fc_last_1(out))
        out = F.relu(self.fc_last_2(out))
        return out


def bce_on_sigmoid(output, batch_label):
    return F.binary_cross_entropy(torch.sigmoid(output), batch_label)


def make():
    torch.manual_seed(0)
    model = XceptionLike()
    batch_z_16, batch_z_32, batch_z_48 = (torch.randn(16, 1, s, s) for s in (16, 32, 48))
    batch_label = (torch.rand(16, 1) > 0.5).float()
    return {
        "model": model,
        "batch": ((batch_z_16, batch_z_32, batch_z_48), batch_label),
        "loss_fn": bce_on_sigmoid,
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
    }
