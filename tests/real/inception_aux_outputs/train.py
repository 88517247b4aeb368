"""ImageNet-style training of an Inception-v3-like network that has an auxiliary classifier."""

from collections import namedtuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])


class InceptionAux(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 32, 1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(F.relu(self.conv(x)), 1)
        return self.fc(x.flatten(1))


class InceptionLike(nn.Module):
    def __init__(self, num_classes=200, aux_logits=True):
        super().__init__()
        self.aux_logits = aux_logits
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2), nn.ReLU(), nn.Conv2d(32, 64, 3, 2), nn.ReLU())
        self.mixed = nn.Sequential(nn.Conv2d(64, 96, 3, 1, 1), nn.ReLU())
        self.AuxLogits = InceptionAux(96, num_classes) if aux_logits else None
        self.final = nn.Sequential(nn.Conv2d(96, 128, 3, 2), nn.ReLU())
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.mixed(self.stem(x))
        aux = self.AuxLogits(x) if self.training and self.aux_logits else None
        x = F.adaptive_avg_pool2d(self.final(x), 1).flatten(1)
        x = self.fc(F.dropout(x, 0.5, self.training))
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    for i, (images, target) in enumerate(train_loader):
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")


data = TensorDataset(torch.randn(64, 3, 75, 75), torch.randint(0, 200, (64,)))
train_loader = DataLoader(data, batch_size=16, shuffle=True)
model = InceptionLike()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(2):
    train(train_loader, model, criterion, optimizer, epoch)
