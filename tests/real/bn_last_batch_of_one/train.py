"""A CIFAR-10 style sanity run: a small CNN with a batch-normalised classifier head."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Sequential(
            nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def create_train_loader(num_samples=100, batch_size=3):
    dataset = TensorDataset(torch.randn(num_samples, 3, 32, 32),
                            torch.randint(0, 10, (num_samples,)))
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=0)


def train_epoch(model, loader, criterion, optimizer):
    model.train()
    for images, target in loader:
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


model = Net()
train_loader = create_train_loader()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
print(f"loss {train_epoch(model, train_loader, criterion, optimizer):.3f}")
