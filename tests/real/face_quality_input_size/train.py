"""SER-FIQ face image quality: repeated stochastic passes through an iResNet embedding head."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


class IResNet(nn.Module):
    fc_scale = 7 * 7

    def __init__(self, num_features=512):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.prelu = nn.PReLU(32)
        self.layer1 = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64), nn.PReLU(64))
        self.layer2 = nn.Sequential(nn.Conv2d(64, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64), nn.PReLU(64))
        self.layer3 = nn.Sequential(nn.Conv2d(64, 512, 1, 2, 0, bias=False), nn.BatchNorm2d(512))
        self.dropout = nn.Dropout(p=0.5)
        self.fc = nn.Linear(512 * self.fc_scale, num_features)
        self.features = nn.BatchNorm1d(num_features, affine=False)

    def backbone(self, x):
        x = self.prelu(self.bn1(self.conv1(x)))
        return self.layer3(self.layer2(self.layer1(x)))

    def forward(self, x):
        x = torch.flatten(self.backbone(x), 1)
        return self.features(self.fc(self.dropout(x)))

    def calculate_serfiq(self, x, T=10, scaling=5.0):
        self.eval()
        with torch.no_grad():
            x = self.backbone(x)
            x = torch.flatten(x, 1)
            x = x.repeat(T, 1)
            self.dropout.train()
            x = self.dropout(x)
            x = self.fc(x)
            x = self.features(x)
            x = F.normalize(x, dim=1)
            distances = torch.cdist(x, x)
            return 2 * (1 / (1 + torch.exp(distances.mean() * scaling)))


def preprocess(face):
    tensor = torch.from_numpy(face).permute(2, 0, 1).float()
    return ((tensor / 255.0 - 0.5) / 0.5).unsqueeze(0)


resnet = IResNet()
raw_face = rng.integers(0, 256, (512, 512, 3), dtype=np.uint8)
image = preprocess(raw_face)
scores = resnet.calculate_serfiq(image, T=10, scaling=5.0)
print(f"SER-FIQ quality {scores.item():.4f}")
