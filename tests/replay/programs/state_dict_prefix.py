"""A checkpoint saved from a DataParallel wrapper, loaded into the bare model."""

from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
        self.classifier = nn.Linear(8, 10)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


wrapped = nn.DataParallel(Net())
checkpoint = {"epoch": 3, "state_dict": wrapped.state_dict()}
model = Net()
model.load_state_dict(checkpoint["state_dict"])  # RAISES
