"""A small residual CNN for 32x32 colour images, trained with SGD."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class ResidualUnit(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_0 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(24)
        self.conv_1 = nn.Conv2d(24, 24, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(24)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        residual = self.conv_1(x)
        residual = self.bn_1(residual)
        x += residual
        x = F.relu(x, inplace=True)
        return x


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.unit = ResidualUnit()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(24, num_classes)

    def forward(self, x):
        x = self.unit(x)
        x = self.pool(x).flatten(1)
        return self.fc(x)


data = TensorDataset(torch.randn(256, 3, 32, 32), torch.randint(0, 10, (256,)))
loader = DataLoader(data, batch_size=32, shuffle=True)

model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for epoch in range(2):
    for images, labels in loader:
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
