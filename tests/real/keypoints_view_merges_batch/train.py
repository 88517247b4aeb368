"""Facial keypoint regression: a CNN predicts 68 (x, y) points on 224x224 grayscale faces."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)


class FacialKeypointsDataset(Dataset):
    def __init__(self, n=40):
        self.images = rng.random((n, 224, 224)).astype(np.float32)
        self.keypoints = rng.normal(0.0, 1.0, (n, 68, 2))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        image = torch.from_numpy(self.images[idx]).unsqueeze(0)
        key_pts = torch.from_numpy(self.keypoints[idx])
        return {"image": image, "keypoints": key_pts}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.conv3 = nn.Conv2d(64, 128, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.gap = nn.AdaptiveAvgPool2d(4)
        self.fc1 = nn.Linear(128 * 4 * 4, 512)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(512, 136)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.pool(F.relu(self.conv3(x)))
        x = self.gap(x)
        x = x.view(x.size(0), -1)
        x = self.drop(F.relu(self.fc1(x)))
        return self.fc2(x)


def train_net(net, loader, criterion, optimizer, n_epochs):
    net.train()
    for epoch in range(n_epochs):
        running_loss = 0.0
        for batch_i, data in enumerate(loader):
            images = data["image"]
            key_pts = data["keypoints"]

            key_pts = key_pts.view(1, -1)

            key_pts = key_pts.type(torch.FloatTensor)
            images = images.type(torch.FloatTensor)

            output_pts = net(images)

            loss = criterion(output_pts, key_pts)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            running_loss += loss.item()
        print(f"epoch {epoch + 1}: avg loss {running_loss / (batch_i + 1):.4f}")


net = Net()
loader = DataLoader(FacialKeypointsDataset(), batch_size=10, shuffle=True)
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
train_net(net, loader, criterion, optimizer, n_epochs=2)
