"""Person re-ID baseline: train an identity classifier, then reload it in the test script."""

import os
import tempfile

import torch
from torch import nn

torch.manual_seed(0)
NAME = "ft_ResNet50"
SAVE_DIR = os.path.join(tempfile.mkdtemp(), NAME)
os.makedirs(SAVE_DIR)


class ClassBlock(nn.Module):
    def __init__(self, input_dim, class_num, droprate=0.5, num_bottleneck=512):
        super().__init__()
        self.add_block = nn.Sequential(
            nn.Linear(input_dim, num_bottleneck), nn.BatchNorm1d(num_bottleneck), nn.Dropout(droprate))
        self.classifier = nn.Sequential(nn.Linear(num_bottleneck, class_num))

    def forward(self, x):
        return self.classifier(self.add_block(x))


class ft_net(nn.Module):
    def __init__(self, class_num, droprate=0.5, stride=2):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride, 1), nn.BatchNorm2d(32), nn.ReLU(True),
            nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(True),
            nn.AdaptiveAvgPool2d(1))
        self.classifier = ClassBlock(64, class_num, droprate)

    def forward(self, x):
        return self.classifier(self.model(x).flatten(1))


# ---- train.py: the identities come from the user's own dataset ----
train_ids = torch.arange(156).repeat_interleave(2)
class_names = sorted(set(train_ids.tolist()))
model = ft_net(len(class_names))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(2):
    idx = torch.randint(0, len(train_ids), (16,))
    loss = nn.functional.cross_entropy(model(torch.randn(16, 3, 128, 64)), train_ids[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model.state_dict(), os.path.join(SAVE_DIR, "net_last.pth"))
print(f"trained {len(class_names)} identities, loss {loss.item():.3f}")


# ---- test.py ----
def load_network(network):
    save_path = os.path.join(SAVE_DIR, "net_last.pth")
    network.load_state_dict(torch.load(save_path))
    return network


model_structure = ft_net(751, stride=2)
model = load_network(model_structure)
model.classifier.classifier = nn.Sequential()
model.eval()
with torch.no_grad():
    features = model(torch.randn(4, 3, 128, 64))
print(features.shape)
